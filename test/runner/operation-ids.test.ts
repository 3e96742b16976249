import { describe, expect, it } from 'vitest';
import { createRunner, defineAction, memoryStore, newOperationId } from '../../src/index.js';

const V7 = /^op_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('newOperationId', () => {
  it('is op_ and a UUIDv7 whose first 48 bits are the time in ms', () => {
    const at = Date.UTC(2026, 10, 30, 22, 10, 0, 123);
    const id = newOperationId(at);
    expect(id).toMatch(V7);
    expect(Number.parseInt(id.slice(3, 11) + id.slice(12, 16), 16)).toBe(at);
  });

  it('sorts by time across milliseconds and never repeats within one', () => {
    const ids = Array.from({ length: 2000 }, (_, i) =>
      newOperationId(1_700_000_000_000 + Math.floor(i / 100)),
    );
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 100; i < ids.length; i += 100) expect(ids[i - 1]! < ids[i]!).toBe(true);
  });

  it('is what a runner names its operations by default', async () => {
    const rows = new Map<string, string>();
    const action = defineAction({
      name: 'set',
      description: 'Sets a value',
      input: { '~standard': { version: 1, vendor: 'test', validate: (value) => ({ value }) } },
      target: (input: { id: string }) => `row:${input.id}`,
      postcondition: 'The row is set.',
      execute: async (input: { id: string }) => {
        rows.set(input.id, 'set');
        return { ok: true };
      },
      observe: async (input: { id: string }) => (rows.has(input.id) ? { value: rows.get(input.id) } : null),
      expect: () => ({ value: 'set' }),
    });
    const store = memoryStore();
    const before = Date.now();
    const completion = await createRunner({ store }).run(action, { id: 'a' }, { runId: 'r' });
    expect(completion.status).toBe('verified');
    expect(completion.operationId).toMatch(V7);
    const stamped = Number.parseInt(
      completion.operationId.slice(3, 11) + completion.operationId.slice(12, 16),
      16,
    );
    expect(stamped).toBeGreaterThanOrEqual(before);
    expect(stamped).toBeLessThanOrEqual(Date.now());
    expect((await store.get(completion.operationId))?.id).toBe(completion.operationId);
  });
});
