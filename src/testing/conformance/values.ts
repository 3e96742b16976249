import { strict as assert } from 'node:assert';
import type { NewOperation, OperationStore } from '../../store/types.js';
import { type CaseBody, ev, newOp, rejectsWith, reserve, T0 } from './support.js';

// Valid JavaScript strings that a database may not hold as given: unpaired UTF-16 surrogates (which
// SQLite and PostgreSQL text turn into replacement characters) and NUL (which PostgreSQL refuses).
const AWKWARD = ['lone-high-\ud800', 'lone-low-\udc00', 'nul-\u0000-inside'];

/** Reserves `op` and says whether the store kept it exactly; a refusal must be a ReadbackError that wrote nothing. */
async function reservedExactly(store: OperationStore, op: NewOperation): Promise<boolean> {
  let created: boolean;
  try {
    ({ created } = await store.reserve(op, ev('reserved', T0, { actor: op.actor })));
  } catch (error) {
    assert.equal(
      (error as Error).name,
      'ReadbackError',
      `refusing ${op.id} must be a ReadbackError: ${error}`,
    );
    assert.equal(await store.get(op.id), null, `a refused reserve of ${op.id} must write nothing`);
    assert.equal(await store.getByKey(op.idempotencyKey), null);
    assert.deepEqual(await store.events(op.id), []);
    return false;
  }
  assert.equal(created, true, `${op.id} has a key of its own, so its reserve must create a record`);
  const stored = await store.get(op.id);
  for (const field of ['idempotencyKey', 'target', 'action', 'runId', 'actor', 'input', 'scope'] as const) {
    assert.deepEqual(stored?.[field], op[field], `${op.id}: ${field} must read back exactly as written`);
  }
  assert.deepEqual(await store.getByKey(op.idempotencyKey), stored);
  assert.equal((await store.events(op.id))[0]?.actor, op.actor);
  return true;
}

/** Text and JSON values a store must keep exactly or refuse, never change. */
export const valueCases: CaseBody[] = [
  [
    'text a store cannot hold as given is refused before anything is written, never changed',
    async (store) => {
      let n = 0;
      for (const text of AWKWARD) {
        for (const field of ['idempotencyKey', 'target', 'action', 'runId', 'actor'] as const) {
          n++;
          await reservedExactly(store, newOp(`text-${n}`, { [field]: `${field}-${text}` }));
        }
        n++;
        await reservedExactly(
          store,
          newOp(`json-${n}`, { input: { text, list: [text] }, scope: { t: text } }),
        );
      }
      // Distinct keys stay distinct: two requests must never be merged into one record.
      const a = await reservedExactly(store, newOp('pair-a', { idempotencyKey: 'pair-\ud800' }));
      const b = await reservedExactly(store, newOp('pair-b', { idempotencyKey: 'pair-\ud801' }));
      if (a && b) assert.notEqual((await store.getByKey('pair-\ud801'))?.id, 'pair-a');
    },
  ],

  [
    'a transition carrying text or JSON the store cannot hold changes nothing, or keeps it exactly',
    async (store) => {
      await reserve(store, 1);
      let at = T0;
      for (const text of AWKWARD) {
        for (const [patch, actor] of [
          [{ status: null, leaseOwner: text }, 'agent'],
          [{ status: null }, text],
          [{ status: null, completion: { status: 'verified', reason: text } as never }, 'agent'],
        ] as const) {
          at++;
          const prior = await store.get('op-1');
          const logged = (await store.events('op-1')).length;
          let moved: Awaited<ReturnType<OperationStore['transition']>>;
          try {
            moved = await store.transition('op-1', ['requested'], patch, ev('moved', at, { actor }));
          } catch (error) {
            assert.equal((error as Error).name, 'ReadbackError', `a refused transition: ${error}`);
            assert.deepEqual(await store.get('op-1'), prior, 'a refused transition must change nothing');
            assert.equal(
              (await store.events('op-1')).length,
              logged,
              'a refused transition must log nothing',
            );
            continue;
          }
          assert.ok(moved);
          const stored = await store.get('op-1');
          for (const [field, value] of Object.entries(patch)) {
            assert.deepEqual(
              stored?.[field as keyof typeof stored],
              value,
              `${field} must read back exactly`,
            );
          }
          assert.equal((await store.events('op-1')).at(-1)?.actor, actor);
        }
      }
    },
  ],

  [
    'a number field that is NaN or infinite is refused, naming it, and nothing is written',
    async (store) => {
      for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
        await rejectsWith(
          () => store.reserve({ ...newOp(9), nextPollAt: bad }, ev('reserved')),
          'invalid_options',
          `a reserve with nextPollAt ${bad}`,
        );
      }
      assert.equal(await store.get('op-9'), null);
      await reserve(store, 1);
      for (const field of ['nextPollAt', 'attempt', 'leaseExpiresAt'] as const) {
        await assert.rejects(
          () => store.transition('op-1', ['requested'], { [field]: Number.NaN }, ev('status', T0 + 1)),
          (error: unknown) => (error as { field?: string }).field === `patch.${field}`,
        );
      }
      assert.equal((await store.events('op-1')).length, 1);
      assert.equal((await store.get('op-1'))?.nextPollAt, null);
    },
  ],
  [
    'JSON fields and event details read back as JSON keeps them, as a durable store must',
    async (store) => {
      // Valid JavaScript that JSON cannot keep as it is: what an action's execute and observe are handed
      // after a restart is what the store kept, so every store (the memory one too) hands that from the start.
      const odd = () => ({
        when: new Date(T0),
        nan: Number.NaN,
        inf: Number.POSITIVE_INFINITY,
        negativeZero: -0,
        gone: undefined,
        list: [undefined, -0, new Date(T0)],
      });
      const kept = {
        when: new Date(T0).toISOString(),
        nan: null,
        inf: null,
        negativeZero: 0,
        list: [null, 0, new Date(T0).toISOString()],
      };
      const { record } = await store.reserve(
        newOp(1, { input: odd() }),
        ev('reserved', T0, { detail: { seen: odd() } }),
      );
      assert.deepEqual(record.input, kept);
      assert.ok(Object.is((record.input as typeof kept).negativeZero, 0), '-0 is kept as 0');
      assert.deepEqual((await store.get('op-1'))?.input, kept);
      assert.deepEqual((await store.events('op-1'))[0]?.detail, { seen: kept });

      const moved = await store.transition(
        'op-1',
        ['requested'],
        { lifecycle: 'executing', providerRef: odd(), baseline: odd() },
        ev('executing', T0 + 1, { detail: odd() }),
      );
      assert.deepEqual(moved?.providerRef, kept);
      assert.deepEqual(moved?.baseline, kept);
      const stored = await store.get('op-1');
      assert.deepEqual(stored?.providerRef, kept);
      assert.deepEqual(stored?.baseline, kept);
      assert.deepEqual((await store.events('op-1'))[1]?.detail, kept);
    },
  ],
];
