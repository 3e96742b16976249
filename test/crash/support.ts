// Helpers the crash and fault tests share: a seeded generator, spawning a child, and the restart loop.
import { spawn } from 'node:child_process';
import { createRunner, type OperationStore, type ReconcileReport, systemClock } from '../../src/index.js';
import type { crashActions } from './actions.js';
import type { ChildConfig } from './child.js';

/** A small seeded generator (mulberry32), so every crash run can be replayed from its seed. */
export function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)]!;
  return { next, int, pick };
}
export type Rng = ReturnType<typeof rng>;

/** How a child ended, with the JSON lines it printed. */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  lines: Record<string, unknown>[];
  stderr: string;
}

/** Spawns the compiled child with a config; a child still alive after 30 s is killed and reported. */
export function runChild(childPath: string, config: ChildConfig): Promise<ChildExit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [childPath, JSON.stringify(config)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => {
      stderr += '\n[killed by the test after 30 s]';
      child.kill('SIGKILL');
    }, 30_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const lines = stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({ code, signal, lines, stderr });
    });
  });
}

/**
 * The restart after a kill: fresh runners on the same files reconcile once per pass, each pass after
 * the earliest open record is due and its lease (if a dead process held one) has expired, until no open
 * record is due any more. Records in `requested` are left to the reserve-grace sweep. Bounded: 60
 * passes or 20 s, then it throws with the records still open.
 */
export async function recover(
  store: OperationStore,
  actions: ReturnType<typeof crashActions>,
  label: string,
  reports: ReconcileReport[],
): Promise<number> {
  const started = Date.now();
  for (let pass = 0; ; pass++) {
    const open = (await store.list({ lifecycle: ['executing', 'accepted', 'running', 'timed_out'] })).filter(
      (r) => r.nextPollAt !== null,
    );
    if (open.length === 0) return pass;
    if (pass >= 60 || Date.now() - started > 20_000) {
      const dump = open.map((r) => `${r.idempotencyKey} ${r.lifecycle}/${r.status} next=${r.nextPollAt}`);
      throw new Error(`${label}: still open after ${pass} reconcile passes: ${dump.join('; ')}`);
    }
    const due = Math.min(...open.map((r) => Math.max(r.nextPollAt!, r.leaseExpiresAt ?? 0)));
    const wait = due - Date.now() + 5;
    if (wait > 0) await systemClock.sleep(wait);
    const runner = createRunner({ store, actions: actions.all });
    reports.push(await runner.reconcile({ once: true, leaseMs: 2_000, concurrency: 8 }));
  }
}
