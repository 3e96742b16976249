// A crash-test child process (transpiled by compile.mjs, run with plain node). It opens the real SQLite
// store and the shared fake target, then either runs a batch of operations (role "run") or reconciles
// (role "reconcile"), and SIGKILLs itself at the named failpoint. It prints one JSON line per event of
// interest with fs.writeSync, so the line is out before the kill.
import { writeSync } from 'node:fs';
import { createRunner, type OperationStore } from '../../src/index.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { type CrashOp, crashActions } from './actions.js';
import { Target } from './target.js';

/** Where a child dies; `none` runs to the end. */
export type Failpoint =
  | { name: 'none' }
  | { name: 'after_reserve'; key: string }
  | { name: 'after_effect'; key: string }
  | { name: 'mid_observe'; key: string; phase: 'before' | 'after' }
  | { name: 'mid_poll'; nth: number; phase: 'before' | 'after' };

/** What the test hands a child, as JSON in argv[2]. */
export interface ChildConfig {
  role: 'run' | 'reconcile';
  storePath: string;
  targetPath: string;
  ops: CrashOp[];
  /** Run role: operations in flight at once. Reconcile role: the reconciler's concurrency. */
  concurrency: number;
  /** Run role: whether accepted jobs are waited for (false parks them pending for a reconciler). */
  wait: boolean;
  leaseMs: number;
  failpoint: Failpoint;
  /** Reconcile role: give up (exit 3) if the failpoint has not fired by then. */
  giveUpAfterMs: number;
}

const config = JSON.parse(process.argv[2]!) as ChildConfig;
const say = (line: Record<string, unknown>) => writeSync(1, `${JSON.stringify(line)}\n`);
const die = (where: string, detail: Record<string, unknown> = {}): never => {
  say({ fired: config.failpoint.name, where, at: Date.now(), pid: process.pid, ...detail });
  process.kill(process.pid, 'SIGKILL');
  // SIGKILL is delivered before this line runs; the throw only satisfies the type checker.
  throw new Error('unreachable');
};

const fp = config.failpoint;
const target = await Target.open(config.targetPath);
let observes = 0;
const actions = crashActions(target, {
  afterEffect(key, attempt) {
    if (fp.name === 'after_effect' && fp.key === key) die('after_effect', { key, attempt });
  },
  inObserve(key, phase) {
    if (phase === 'before') observes++;
    if (fp.name === 'mid_observe' && fp.key === key && fp.phase === phase) die('mid_observe', { key, phase });
    if (fp.name === 'mid_poll' && fp.nth === observes && fp.phase === phase)
      die('mid_poll', { key, phase, observes });
  },
});

const opened = await sqliteStore({ path: config.storePath });
const store: OperationStore = {
  ...opened,
  async reserve(op, event, start) {
    // Half the operations are reserved and started in one write (the runner's usual path), half in two (as
    // for an action with a baseline read), so the crash after reserve lands in either shape.
    const oneWrite = [...op.idempotencyKey].reduce((sum, c) => sum + c.charCodeAt(0), 0) % 2 === 0;
    const result = await opened.reserve(op, event, oneWrite ? start : undefined);
    if (fp.name === 'after_reserve' && fp.key === op.idempotencyKey) die('after_reserve', { key: fp.key });
    return result;
  },
};
const runner = createRunner({ store, actions: actions.all });

if (config.role === 'run') {
  const queue = [...config.ops];
  const statuses: Record<string, string> = {};
  const worker = async () => {
    for (let op = queue.shift(); op; op = queue.shift()) {
      const c = await runner.run(actions.byKind[op.kind], op, {
        runId: `crash-${process.pid}`,
        wait: config.wait,
      });
      // With the code, so a run that did not verify says why.
      statuses[op.key] = c.errorCode ? `${c.status}/${c.errorCode}` : c.status;
    }
  };
  await Promise.all(Array.from({ length: config.concurrency }, worker));
  say({ done: true, statuses });
} else {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), config.giveUpAfterMs);
  const report = await runner.reconcile({
    concurrency: config.concurrency,
    leaseMs: config.leaseMs,
    idleMs: 20,
    signal: controller.signal,
  });
  clearTimeout(timer);
  say({ done: true, report, observes });
  await store.close();
  target.close();
  process.exit(fp.name === 'none' ? 0 : 3);
}
await store.close();
target.close();
