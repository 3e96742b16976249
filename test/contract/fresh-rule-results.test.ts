import { describe, expect, it } from 'vitest';
import { type Check, createRunner, defineAction } from '../../src/index.js';

// A committed write whose hand-written freshness rule returns `result`: the row matches, so the rule decides.
function actionWithFresh(result: () => unknown) {
  const rows = new Map<string, { id: string; status: string }>();
  return defineAction({
    name: 'set_status',
    description: 'Sets a status.',
    postcondition: 'The row has the status.',
    input: { '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => ({ value }) } },
    target: () => 'row:1',
    execute: async () => {
      rows.set('1', { id: '1', status: 'done' });
      return { ok: true };
    },
    observe: async () => rows.get('1') ?? null,
    expect: () => ({ status: 'done' }),
    fresh: result as () => boolean | Check,
    settle: { timeoutMs: 0, intervalMs: 1 },
  });
}

describe('what a hand-written fresh rule returns', () => {
  it('an unnamed failing check is a stale read, named "fresh" (it crashed the run as store_unavailable)', async () => {
    const c = await createRunner().run(
      actionWithFresh(() => ({ pass: false })),
      {},
      { runId: 'r' },
    );
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'stale_read' });
    expect(c.reason).toContain('(fresh)');
    expect(c.checks.at(-1)).toMatchObject({ name: 'fresh', pass: false });
  });

  it('an unnamed passing check verifies', async () => {
    const c = await createRunner().run(
      actionWithFresh(() => ({ pass: true })),
      {},
      { runId: 'r' },
    );
    expect(c.status).toBe('verified');
  });

  it('a promise, a string or a check without a boolean pass is an invalid expectation, never verified', async () => {
    for (const result of [() => Promise.resolve(true), () => 'yes', () => ({ name: 'f' }), () => null]) {
      const c = await createRunner().run(actionWithFresh(result), {}, { runId: 'r' });
      expect(c).toMatchObject({ status: 'unknown', errorCode: 'invalid_expectation' });
    }
  });
});
