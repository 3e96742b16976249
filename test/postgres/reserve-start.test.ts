// A reserve that also starts its operation on Postgres: the row is inserted already moved and both events are
// appended by the one statement, alone or batched with plain reserves, so a committed action costs two writes.
import { describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/postgres/index.js';
import { createRunner } from '../../src/runner/runner.js';
import { ev, newOp, T0 } from '../../src/testing/conformance/support.js';
import { MIXED_LIFECYCLES, reserveMixed, start, trail } from '../fixtures/reserve-start.js';
import { setStatusAction } from '../fixtures/set-status.js';
import { pgSuite, recordingPool, type Sent } from './support.js';

const { available, tempSchema, tempPool } = await pgSuite();

async function openStore(groupCommit: boolean) {
  const { db, sent } = recordingPool(tempPool(4));
  const store = await postgresStore({ pool: db, schema: tempSchema(), groupCommit });
  sent.length = 0;
  return { store, sent };
}

/** The statements that wrote (reserves and transitions), in the order they were sent. */
const writes = (sent: Sent[]) => sent.filter((s) => /^\s*(WITH|INSERT|UPDATE)/.test(s.text));

describe.skipIf(!available)('postgres reserve with a start', () => {
  const rows = new Map<string, string>();
  const setStatus = (withBaseline = false) =>
    setStatusAction(rows, { withBaseline, name: withBaseline ? 'set_status_from_baseline' : 'set_status' });

  for (const groupCommit of [false, true]) {
    it(`a committed action costs two writes, the reserve that starts it and the settle (groupCommit: ${groupCommit})`, async () => {
      const { store, sent } = await openStore(groupCommit);
      const runner = createRunner({ store });
      const c = await runner.run(setStatus(), { id: `a${groupCommit}`, status: 'done' }, { runId: 'r' });
      expect(c.status).toBe('verified');
      expect(rows.get(`a${groupCommit}`)).toBe('done');
      expect(writes(sent)).toHaveLength(2);
      expect(await trail(store, c.operationId)).toEqual([
        '1:reserved:->requested@0',
        '2:executing:requested>executing@1',
        '3:settled:executing>settled@1',
      ]);

      // A baseline read runs between reserving and executing: the drive moves the record itself, as before.
      sent.length = 0;
      const b = await runner.run(setStatus(true), { id: `b${groupCommit}`, status: 'done' }, { runId: 'r' });
      expect(b.status).toBe('verified');
      expect(writes(sent)).toHaveLength(3);
      expect((await trail(store, b.operationId)).map((e) => e.replace(/^\d+:/, ''))).toEqual(
        (await trail(store, c.operationId)).map((e) => e.replace(/^\d+:/, '')),
      );
      await store.close();
    });
  }

  it('plain and started reserves of one turn go as one statement', async () => {
    const { store, sent } = await openStore(true);
    const results = await reserveMixed(store);
    expect(sent.map((s) => s.batch)).toEqual([6]);
    expect(results.map(({ record }) => record.lifecycle)).toEqual(MIXED_LIFECYCLES);
    // Each started row's event counter matches its log (the next write lands at seq 3).
    await store.transition('op-m0', ['executing'], { reads: 1 }, ev('observed', T0 + 2));
    expect((await store.events('op-m0')).map((e) => e.seq)).toEqual([1, 2, 3]);
    await store.close();
  });

  it('a start jsonb cannot hold is refused naming its field, and nothing is written', async () => {
    for (const groupCommit of [false, true]) {
      const { store } = await openStore(groupCommit);
      const [refused, plain] = await Promise.allSettled([
        store.reserve(newOp('nul'), ev('reserved'), start(1, { text: 'a\u0000b' })),
        store.reserve(newOp('fine'), ev('reserved'), start()),
      ]);
      expect(refused.status).toBe('rejected');
      expect((refused as PromiseRejectedResult).reason).toMatchObject({
        code: 'unstorable_value',
        field: 'start.event.detail',
      });
      expect(await store.get('op-nul')).toBeNull();
      expect(await store.events('op-nul')).toEqual([]);
      // In a batch, only the refused reserve fails; the other is made.
      expect(plain.status).toBe('fulfilled');
      expect(await trail(store, 'op-fine')).toHaveLength(2);
      await store.close();
    }
  });
});
