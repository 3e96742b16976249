import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunner, memoryStore } from '../../src/index.js';
import { type CrashOp, crashActions } from './actions.js';
import { checkLane } from './checker.js';
import { Target } from './target.js';

// The checker must be able to fail: each case breaks one invariant by hand and expects it named.
const root = mkdtempSync(join(tmpdir(), 'readback-checker-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

async function setup() {
  const target = await Target.open(join(root, `t-${n++}`, 'target.db'));
  const store = memoryStore();
  const actions = crashActions(target);
  const runner = createRunner({ store, actions: actions.all });
  return { target, store, actions, runner };
}

describe('the crash checker', () => {
  it('passes a clean run', async () => {
    const { target, store, actions, runner } = await setup();
    const ops: CrashOp[] = [
      { kind: 'bump', key: 'b' },
      { kind: 'ledger', key: 'l', amount: 3 },
    ];
    for (const op of ops)
      expect((await runner.run(actions.byKind[op.kind], op, { runId: 'r' })).status).toBe('verified');
    expect((await checkLane(store, target, ops)).violations).toEqual([]);
    target.close();
  });

  it('flags a not-safe-to-repeat effect applied twice, and an effect with no record', async () => {
    const { target, store, actions, runner } = await setup();
    const ops: CrashOp[] = [
      { kind: 'bump', key: 'b' },
      { kind: 'bump', key: 'ghost' },
    ];
    await runner.run(actions.bump, ops[0], { runId: 'r' });
    target.bump('b', 1);
    target.bump('ghost', 1);
    const { violations } = await checkLane(store, target, ops);
    expect(violations).toContainEqual(
      expect.stringMatching(/b \(bump\): not-safe-to-repeat effect applied 2 times/),
    );
    expect(violations).toContainEqual(expect.stringMatching(/b \(bump\): one attempt executed twice/));
    expect(violations).toContainEqual(
      expect.stringMatching(/ghost \(bump\): 1 effect\(s\) but no operation record/),
    );
    target.close();
  });

  it('flags a record still open and an effect before its executing event', async () => {
    const { target, store, actions, runner } = await setup();
    const op: CrashOp = { kind: 'job', key: 'j', durationMs: 5_000, outcome: 'succeeded' };
    target.enqueue('j', 5_000, 'succeeded', 1);
    // A clear gap, so the hand-made effect is strictly earlier than the run's executing event.
    await new Promise((resolve) => setTimeout(resolve, 10));
    await runner.run(actions.job, op, { runId: 'r', wait: false });
    const { violations } = await checkLane(store, target, [op]);
    expect(violations).toContainEqual(expect.stringMatching(/j \(job\): still open: lifecycle accepted/));
    expect(violations).toContainEqual(expect.stringMatching(/precedes its executing event/));
    target.close();
  });
});

describe('the crash checker on a withdrawn start', () => {
  it('accepts a start withdrawn before execute, and still flags any other way back', async () => {
    const { target, store, actions } = await setup();
    const ops: CrashOp[] = [
      { kind: 'bump', key: 'w' },
      { kind: 'bump', key: 'back' },
    ];
    // The caller aborts right after the reserve that starts the record is handed to the store.
    const controller = new AbortController();
    const aborting = new Proxy(store, {
      get(inner, key) {
        const value = Reflect.get(inner, key, inner);
        if (key !== 'reserve') return typeof value === 'function' ? value.bind(inner) : value;
        return (...args: Parameters<typeof store.reserve>) => {
          const written = inner.reserve(...args);
          controller.abort();
          return written;
        };
      },
    });
    const first = await createRunner({ store: aborting, actions: actions.all }).run(actions.bump, ops[0], {
      runId: 'r',
      signal: controller.signal,
    });
    expect(first.errorCode).toBe('aborted');
    const runner = createRunner({ store, actions: actions.all });
    for (const op of ops)
      expect((await runner.run(actions.bump, op, { runId: 'r' })).status).toBe('verified');
    expect((await checkLane(store, target, ops)).violations).toEqual([]);

    // Moving a settled-bound record back by any other event is still a violation.
    const back = (await store.list()).find((r) => r.target.endsWith('back'))!;
    const events = await store.events(back.id);
    expect(events.map((e) => e.type)).toEqual(['reserved', 'executing', 'settled']);
    const reopened = memoryStore();
    const again = await reopened.reserve(
      { ...back, scope: back.scope, nextPollAt: null },
      {
        type: 'reserved',
        at: back.requestedAt,
        from: null,
        to: 'requested',
        status: null,
        actor: null,
        attempt: 0,
      },
    );
    const move = (type: string, to: 'executing' | 'requested' | 'settled', attempt: number, from: string) =>
      reopened.transition(
        again.record.id,
        [from as 'requested'],
        {
          lifecycle: to,
          attempt,
          ...(to === 'settled' ? { status: 'verified', completion: back.completion } : {}),
        },
        { type, at: back.updatedAt, from: null, to, status: null, actor: null, attempt },
      );
    await move('executing', 'executing', 1, 'requested');
    await move('status', 'requested', 0, 'executing');
    await move('executing', 'executing', 1, 'requested');
    await move('settled', 'settled', 1, 'executing');
    const { violations } = await checkLane(reopened, target, [ops[1]!]);
    expect(violations).toContainEqual(
      expect.stringMatching(/back \(bump\) events: attempt went back from 1 to 0/),
    );
    expect(violations).toContainEqual(
      expect.stringMatching(/back \(bump\) events: lifecycle went back to requested/),
    );
    target.close();
  });
});

describe('the crash checker on a withdrawn retry', () => {
  it('accepts a retry withdrawn back to its attempt, and flags one withdrawn anywhere else', async () => {
    for (const [backTo, clean] of [
      [1, true],
      [0, false],
    ] as const) {
      const { target, actions } = await setup();
      const store = memoryStore();
      const op: CrashOp = { kind: 'ledger', key: `wr${backTo}`, amount: 3 };
      const runner = createRunner({ store, actions: actions.all });
      expect((await runner.run(actions.ledger, op, { runId: 'r' })).status).toBe('verified');
      const settled = (await store.getByKey(op.key))!;
      // The same operation's trail as a lost first request, a retry withdrawn, then the retry made would leave it.
      const copy = memoryStore();
      const { record } = await copy.reserve(
        { ...settled, nextPollAt: null },
        { type: 'reserved', at: 1, from: null, to: 'requested', status: null, actor: null, attempt: 0 },
      );
      let at = 1;
      const move = (type: string, from: 'requested' | 'executing', attempt: number, settle = false) =>
        copy.transition(
          record.id,
          [from],
          settle
            ? { lifecycle: 'settled', status: 'verified', completion: settled.completion, attempt }
            : { lifecycle: 'executing', attempt },
          {
            type,
            at: ++at,
            from,
            to: settle ? 'settled' : 'executing',
            status: settle ? 'verified' : null,
            actor: null,
            attempt,
          },
        );
      await move('executing', 'requested', 1);
      await move('status', 'executing', 1);
      await move('executing', 'executing', 2);
      await move('withdrawn', 'executing', backTo);
      await move('executing', 'executing', 2);
      await move('settled', 'executing', 2, true);
      const { violations } = await checkLane(copy, target, [op]);
      const about = violations.filter((v) => v.includes('events:'));
      if (clean) expect(about).toEqual([]);
      else expect(about).toContainEqual(expect.stringMatching(/attempt went back from 2 to 0/));
      target.close();
    }
  });
});
