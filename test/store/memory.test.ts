import { describe, expect, it } from 'vitest';
import { ReadbackError } from '../../src/errors.js';
import { memoryStore } from '../../src/store/memory.js';
import type { NewEvent, NewOperation } from '../../src/store/types.js';
import { storeConformance } from '../../src/testing/store-conformance.js';

describe('memoryStore conformance', () => {
  for (const c of storeConformance(() => memoryStore())) it(c.name, c.run);
});

const op = (n: number): NewOperation => ({
  id: `op-${n}`,
  action: 'ticket.resolve',
  target: `ticket:T-${n}`,
  scope: {},
  fingerprint: `fp-${n}`,
  idempotencyKey: `key-${n}`,
  runId: 'run-1',
  actor: null,
  input: { n },
  requestedAt: 1_000,
});
const ev = (type: string, at = 1_000): NewEvent => ({
  at,
  type,
  from: null,
  to: null,
  status: null,
  actor: null,
  attempt: 0,
});

describe('memoryStore specifics', () => {
  it('keeps stores independent of each other', async () => {
    const a = memoryStore();
    const b = memoryStore();
    await a.reserve(op(1), ev('reserved'));
    expect(await b.get('op-1')).toBeNull();
    await a.close();
    expect(await b.list()).toEqual([]);
  });

  it('rejects rather than throws synchronously, with ReadbackError instances', async () => {
    const store = memoryStore();
    let promise: Promise<unknown> | undefined;
    expect(() => {
      promise = store.claimDue(0, 1_000, 'w', 0);
    }).not.toThrow();
    await expect(promise).rejects.toBeInstanceOf(ReadbackError);
    await expect(promise).rejects.toMatchObject({ code: 'invalid_options', field: 'limit' });
  });

  it('rejects an unknown lifecycle in a patch', async () => {
    const store = memoryStore();
    await store.reserve(op(1), ev('reserved'));
    const patch = { lifecycle: 'done' } as unknown as { lifecycle: 'settled' };
    await expect(store.transition('op-1', ['requested'], patch, ev('x'))).rejects.toMatchObject({
      code: 'invalid_options',
      field: 'patch.lifecycle',
    });
    expect((await store.events('op-1')).length).toBe(1);
  });

  it('treats undefined patch values as absent', async () => {
    const store = memoryStore();
    await store.reserve(op(1), ev('reserved'));
    const next = await store.transition(
      'op-1',
      ['requested'],
      { lifecycle: 'executing', status: undefined, executedAt: undefined },
      ev('x', 2_000),
    );
    expect(next).toMatchObject({ lifecycle: 'executing', status: null, executedAt: null, updatedAt: 2_000 });
  });

  it('never writes the lease token into the event log', async () => {
    const store = memoryStore();
    await store.reserve(op(1), ev('reserved'));
    await store.transition('op-1', ['requested'], { lifecycle: 'running', nextPollAt: 1_000 }, ev('x'));
    const [claim] = await store.claimDue(1, 500, 'worker-1', 1_000);
    const log = JSON.stringify(await store.events('op-1'));
    expect(log).not.toContain(claim!.leaseToken);
    expect(log).toContain('worker-1');
  });
});
