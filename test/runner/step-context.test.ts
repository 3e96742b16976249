// What a step sees as `ctx`: the operation's facts, and `ctx.signal` as an own, enumerable property that a step
// can read, spread or pass on. Under a deadline the signal is built only when read, and it aborts when the
// deadline passes or the caller's signal aborts.
import { describe, expect, it } from 'vitest';
import { createRunner, defineAction, memoryStore, type StepContext } from '../../src/index.js';
import { withLazySignal } from '../../src/runner/step-context.js';
import { anyInput } from '../support/any-input.js';

// The step context's own fields, in order, with `signal` in its place.
const CONTEXT_KEYS = ['runId', 'scope', 'signal', 'operationId', 'idempotencyKey', 'attempt', 'startedAt'];

describe('withLazySignal', () => {
  it('makes signal an own enumerable getter, called only when read, that spreads like a field', () => {
    let built = 0;
    const controller = new AbortController();
    const ctx = withLazySignal(
      {
        runId: 'r',
        scope: {},
        operationId: 'op',
        idempotencyKey: 'k',
        attempt: 1,
        startedAt: new Date(0),
      },
      {
        signal() {
          built++;
          return controller.signal;
        },
      },
    );
    expect(built).toBe(0);
    expect(Object.keys(ctx)).toEqual(CONTEXT_KEYS);
    expect(Object.getOwnPropertyDescriptor(ctx, 'signal')).toMatchObject({ enumerable: true });
    expect(built).toBe(0);
    expect(ctx.signal).toBe(controller.signal);
    const copy = { ...ctx };
    expect(Object.getOwnPropertyDescriptor(copy, 'signal')).toMatchObject({ value: controller.signal });
    expect(built).toBe(2);
    // The hidden getter state is not an enumerable field: equality and JSON see the context's facts only.
    expect(JSON.parse(JSON.stringify({ ...ctx, signal: null }))).toMatchObject({ runId: 'r', signal: null });
    expect(
      Object.getOwnPropertySymbols(ctx).every((s) => !Object.getOwnPropertyDescriptor(ctx, s)?.enumerable),
    ).toBe(true);
  });
});

describe('the step context the runner passes', () => {
  function probe(readSignal: boolean) {
    const seen: { execute?: StepContext; observe?: StepContext; spreadSignal?: unknown } = {};
    const rows = new Map<string, string>();
    const action = defineAction({
      name: 'probe.set',
      description: 'Sets a row',
      input: anyInput,
      target: (i: { id: string }) => `row:${i.id}`,
      postcondition: 'The row holds the value.',
      executeTimeoutMs: 50,
      async execute(i: { id: string; v: string }, ctx) {
        seen.execute = ctx;
        if (readSignal) {
          seen.spreadSignal = { ...ctx }.signal;
          // Waits for the deadline: the signal the step read must abort with it.
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
          return { ok: false };
        }
        rows.set(i.id, i.v);
        return { ok: true };
      },
      observe: (i: { id: string }, ctx) => {
        seen.observe = ctx;
        return rows.has(i.id) ? { v: rows.get(i.id) } : null;
      },
      expect: (i: { v: string }) => ({ v: i.v }),
    });
    return { action, seen, rows };
  }

  it('carries the operation facts with signal in place, and a step that reads the signal sees it abort at the deadline', async () => {
    const { action, seen } = probe(true);
    const runner = createRunner({ store: memoryStore() });
    const c = await runner.run(action, { id: 'a', v: 'x' }, { runId: 'run-1' });
    const ctx = seen.execute!;
    expect(Object.keys(ctx).slice(0, 7)).toEqual(CONTEXT_KEYS);
    expect(ctx).toMatchObject({ runId: 'run-1', operationId: c.operationId, attempt: 1 });
    expect(ctx.signal.aborted).toBe(true);
    expect(seen.spreadSignal).toBe(ctx.signal);
    // The step timed out without the effect: the run does not claim it.
    expect(c.status).not.toBe('verified');
  });

  it('a step that never reads the signal still completes and verifies against the target', async () => {
    const { action, seen, rows } = probe(false);
    const runner = createRunner({ store: memoryStore() });
    const c = await runner.run(action, { id: 'b', v: 'y' }, { runId: 'run-2' });
    expect(c.status).toBe('verified');
    expect(rows.get('b')).toBe('y');
    expect(seen.observe).toMatchObject({ runId: 'run-2', operationId: c.operationId });
    expect(seen.observe?.signal.aborted).toBe(false);
  });
});
