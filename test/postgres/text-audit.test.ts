// Text PostgreSQL cannot hold (NUL; jsonb also refuses unpaired surrogates) in what a caller asks the store
// for: it failed with pg's own "invalid byte sequence for encoding UTF8: 0x00", naming no field.
import { describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/postgres/index.js';
import { ev, newOp } from '../../src/testing/conformance/support.js';
import { PG_URL, pgSuite } from './support.js';

const { available, tempSchema } = await pgSuite();

describe.skipIf(!available)('text Postgres cannot hold, in questions to the store', () => {
  it('a list filter naming such text matches nothing, as get and getByKey already answer', async () => {
    const store = await postgresStore({ connectionString: PG_URL, schema: tempSchema() });
    await store.reserve(newOp(1, { runId: 'run-1' }), ev('reserved'));
    expect(await store.list({ runId: 'run-1' })).toHaveLength(1);
    for (const filter of [
      { runId: 'run-1\u0000' },
      { action: 'ticket.resolve\u0000' },
      { action: 'ticket.resolve\ud800' },
      { status: 'verified\u0000' as never },
      { lifecycle: ['requested', 'x\u0000'] as never },
    ]) {
      expect(await store.list(filter)).toEqual([]);
    }
    await store.close();
  });

  it('a claim owner holding NUL is refused naming the field, and nothing is leased', async () => {
    const store = await postgresStore({
      connectionString: PG_URL,
      schema: tempSchema(),
      leaseClock: 'caller',
    });
    await store.reserve(newOp(1, { nextPollAt: 1 }), ev('reserved'));
    await expect(store.claimDue(5, 60_000, 'worker\u0000', 10)).rejects.toMatchObject({
      name: 'ReadbackError',
      code: 'unstorable_value',
      field: 'owner',
    });
    expect((await store.get('op-1'))?.leaseOwner).toBeNull();
    const claims = await store.claimDue(5, 60_000, 'worker', 10);
    expect(claims.map((c) => c.record.id)).toEqual(['op-1']);
    await store.close();
  });
});
