// Diagnostic: where the SQLite per-action gap (issue 3, §7) sits, layer by layer. Four loops run side by side, one
// action of each in turn, on their own files on the real disk: the hand-written SQL of `bench:sqlite`; the store
// alone (its reserve with a start and its settle, called directly with a completion formed in advance); a lean path
// (one async function calling the runner's own pieces for a committed action: validation, intent fingerprint,
// idempotency key, step deadlines, the verdict, the completion and its message; no trace, shadow, tracking, settle
// window or error paths); and the runner. All three issue the hand loop's statements. What the store alone loses is
// the store's JavaScript; what the lean path loses beyond it, the runner's essential work; what the runner loses
// beyond the lean path, its structure.
// Run with `npm run build && node bench/sqlite-layers.js` (BENCH_ROUNDS=3; per round BENCH_OPS_NORMAL=3000 and
// BENCH_OPS_FULL=600 actions of each loop, after BENCH_WARMUP=3000 uncounted).
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { requirePlain, toRecordable } from '../dist/canonical.js';
import { evaluate } from '../dist/contract/evaluate.js';
import { newOperationId, systemClock } from '../dist/index.js';
import { idempotencyKeyFor, intentOf } from '../dist/runner/call-checks.js';
import { startingMove } from '../dist/runner/drive.js';
import { toCompletion } from '../dist/runner/outcome.js';
import { NEVER_ABORTED, withDeadline } from '../dist/runner/timeout.js';
import { settledByVerdict } from '../dist/runner/verdict.js';
import { validateInput } from '../dist/schema.js';
import { COMPLETION, DIR, dispose, handSteps, makeAction, openStore, runnerSteps } from './sqlite-shared.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const OPS = {
  normal: Number(process.env.BENCH_OPS_NORMAL ?? 3_000),
  full: Number(process.env.BENCH_OPS_FULL ?? 600),
};
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3_000);
const GRACE_MS = 30_000;

const reservedEvent = (at) => ({
  type: 'reserved',
  at,
  from: null,
  to: 'requested',
  status: null,
  actor: null,
  attempt: 0,
});
const settledEvent = (at, status, raw) => ({
  type: 'settled',
  at,
  from: 'executing',
  to: 'settled',
  status,
  actor: null,
  attempt: 1,
  detail: { raw, errorCode: null },
});
const settledPatch = (completion, at) => ({
  lifecycle: 'settled',
  status: completion.status,
  completion,
  nextPollAt: null,
  lastObservedAt: at,
});

/** The store's two writes for one action, called directly, with the values the runner would pass. */
async function storeAlone(durability) {
  const { path, store } = await openStore(durability, true);
  const action = makeAction();
  const formed = JSON.parse(COMPLETION);
  const rows = new Map();
  return {
    async step(i) {
      const id = newOperationId();
      const now = Date.now();
      const fingerprint = createHash('sha256').update(`set_status:r${i}`).digest('hex');
      const op = {
        id,
        action: 'set_status',
        target: `row:r${i}`,
        scope: {},
        fingerprint,
        idempotencyKey: `bench:set_status:${fingerprint.slice(0, 32)}`,
        runId: 'bench',
        actor: null,
        input: { id: `r${i}`, status: 'done' },
        requestedAt: now,
        nextPollAt: now + GRACE_MS,
      };
      await store.reserve(op, reservedEvent(now), startingMove(action, now, null, false));
      rows.set(`r${i}`, 'done');
      await Promise.resolve();
      if ((await Promise.resolve(rows.get(`r${i}`))) !== 'done')
        throw new Error(`store-alone action ${i} did not land`);
      const completion = { ...formed, operationId: id };
      const settled = await store.transition(
        id,
        ['executing'],
        settledPatch(completion, now),
        settledEvent(now, 'verified', { ok: true }),
      );
      if (settled?.lifecycle !== 'settled') throw new Error(`store-alone action ${i} did not settle`);
    },
    close: async () => {
      await store.close();
      dispose(path);
    },
  };
}

/** A committed action through the runner's own pieces in one async function: the happy path and nothing else. */
async function leanPath(durability) {
  const { path, store } = await openStore(durability, true);
  const action = makeAction();
  const run = async (raw, ctx) => {
    const validated = validateInput(action.input, raw);
    const input = (validated instanceof Promise ? await validated : validated).value;
    const target = action.target(input);
    const scope = ctx.scope ?? {};
    const { fingerprint } = intentOf(action.name, target, input, scope, false);
    const key = idempotencyKeyFor(action, input, ctx, fingerprint);
    const id = newOperationId();
    const now = Date.now();
    const op = { id, action: action.name, target, scope, fingerprint, idempotencyKey: key, runId: ctx.runId };
    Object.assign(op, {
      actor: null,
      input,
      requestedAt: now,
      nextPollAt: now + action.verifyTimeoutMs + GRACE_MS,
    });
    const { record } = await store.reserve(op, reservedEvent(now), startingMove(action, now, null, false));
    const step = {
      runId: ctx.runId,
      scope,
      operationId: id,
      idempotencyKey: key,
      attempt: 1,
      startedAt: now,
    };
    step.signal = NEVER_ABORTED;
    const result = await withDeadline(systemClock, 'execute', action.executeTimeoutMs, NEVER_ABORTED, () =>
      action.execute(record.input, step),
    );
    const observed = await withDeadline(systemClock, 'observe', action.verifyTimeoutMs, NEVER_ABORTED, () =>
      action.observe(record.input, step),
    );
    const at = Date.now();
    requirePlain(observed);
    const verdict = settledByVerdict(evaluate(action, record.input, observed, step, { target }), at);
    const outcome = {
      target,
      operationId: id,
      idempotencyKey: key,
      attempt: 1,
      nothingExecuted: false,
      ...verdict,
    };
    const completion = toCompletion(outcome, action);
    await store.transition(
      id,
      ['executing'],
      settledPatch(completion, at),
      settledEvent(at, completion.status, toRecordable(result).value),
    );
    return completion;
  };
  return {
    async step(i) {
      const c = await run({ id: `r${i}`, status: 'done' }, { runId: 'bench' });
      if (c.status !== 'verified') throw new Error(`lean action ${i} came back ${c.status}`);
    },
    close: async () => {
      await store.close();
      dispose(path);
    },
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const NAMES = ['hand-written SQL', 'store alone', 'lean path', 'runner'];
let seq = 0;

async function layers(durability) {
  const loops = [
    await handSteps(durability),
    await storeAlone(durability),
    await leanPath(durability),
    await runnerSteps(durability, true),
  ];
  try {
    for (let i = 0; i < WARMUP; i++) {
      const n = ++seq;
      for (const loop of loops) await loop.step(n);
    }
    const micros = loops.map(() => []);
    for (let r = 0; r < ROUNDS; r++) {
      const nanos = loops.map(() => 0n);
      for (let i = 0; i < OPS[durability]; i++) {
        const n = ++seq;
        // Which loop goes first rotates every action, so noise lands on all alike.
        for (let k = 0; k < loops.length; k++) {
          const j = (i + k) % loops.length;
          const start = process.hrtime.bigint();
          await loops[j].step(n);
          nanos[j] += process.hrtime.bigint() - start;
        }
      }
      for (const [j, ns] of nanos.entries()) micros[j].push(Number(ns) / 1e3 / OPS[durability]);
    }
    return micros;
  } finally {
    for (const loop of loops) await loop.close();
  }
}

try {
  console.log(`SQLite per action by layer — node ${process.version}, ${ROUNDS} rounds, files in ${DIR}`);
  console.log('');
  console.log('| durability | loop | µs per action (median) | hand / loop (median of rounds) | per round |');
  console.log('|---|---|---:|---:|---|');
  for (const durability of ['normal', 'full']) {
    const micros = await layers(durability);
    micros.forEach((us, j) => {
      const ratios = us.map((u, r) => micros[0][r] / u);
      console.log(
        `| ${durability.toUpperCase()} | ${NAMES[j]} | ${median(us).toFixed(1)} | ${median(ratios).toFixed(3)} | ${ratios.map((x) => x.toFixed(3)).join(', ')} |`,
      );
    });
  }
} finally {
  rmSync(DIR, { recursive: true, force: true });
}
