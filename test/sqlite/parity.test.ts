import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';
import { memoryStore } from '../../src/store/memory.js';
import type {
  Lifecycle,
  ListFilter,
  OperationStore,
  RecordPatch,
  TransitionGuard,
} from '../../src/store/types.js';
import { ev, newOp, openHandle, T0 } from '../fixtures/sqlite/support.js';

// The memory store is the reference: random command sequences run against it and the SQLite store
// must give the same answers, step by step. Lease tokens are random in both, so each store's
// tokens are renamed by order of appearance before comparing.

const LIFECYCLES: Lifecycle[] = [
  'requested',
  'awaiting_approval',
  'executing',
  'accepted',
  'running',
  'timed_out',
  'settled',
];
const STATUSES = [null, 'verified', 'pending', 'failed', 'partial', 'no_op', 'unknown'] as const;

type Command =
  | { kind: 'reserve'; id: number; key: number; at: number }
  | {
      kind: 'transition';
      id: number;
      from: Lifecycle[];
      patch: RecordPatch;
      at: number;
      lease: number | null;
      attempt: number | null;
    }
  | { kind: 'claim'; limit: number; leaseMs: number; owner: string; now: number }
  | { kind: 'list'; filter: ListFilter }
  | { kind: 'read'; id: number };

const small = fc.integer({ min: 0, max: 2 });
/** `value` a quarter of the time, else null: guards that mostly stay out of the way. */
const rarely = <T>(value: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: value });
const time = fc.integer({ min: 0, max: 50 }).map((t) => T0 + t);
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('reserve' as const), id: small, key: small, at: time }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('transition' as const),
      id: small,
      // Mostly "from anywhere", so sequences reach deep states; sometimes a narrow set, to miss.
      from: fc.oneof(
        { weight: 3, arbitrary: fc.constant(LIFECYCLES.filter((l) => l !== 'settled')) },
        { weight: 1, arbitrary: fc.subarray(LIFECYCLES) },
      ),
      patch: fc.record(
        {
          // Weighted towards the pollable lifecycles, so claims find due work; settling ends a record.
          lifecycle: fc.oneof(
            {
              weight: 4,
              arbitrary: fc.constantFrom<Lifecycle>('running', 'accepted', 'timed_out', 'executing'),
            },
            { weight: 1, arbitrary: fc.constantFrom(...LIFECYCLES) },
          ),
          status: fc.constantFrom(...STATUSES),
          attempt: fc.integer({ min: 0, max: 2 }),
          nextPollAt: fc.option(time, { freq: 4 }),
          reads: fc.integer({ min: 0, max: 3 }),
          providerRef: fc.option(fc.dictionary(fc.string({ maxLength: 3 }), fc.jsonValue({ maxDepth: 2 }))),
          updatedAt: fc.constantFrom(undefined, T0 + 99),
        },
        { requiredKeys: [] },
      ),
      at: time,
      lease: rarely(fc.integer({ min: 0, max: 3 })),
      attempt: rarely(fc.integer({ min: 0, max: 2 })),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('claim' as const),
      limit: fc.integer({ min: 1, max: 3 }),
      leaseMs: fc.integer({ min: 1, max: 30 }),
      owner: fc.constantFrom('w1', 'w2'),
      now: fc.integer({ min: 0, max: 90 }).map((t) => T0 + t),
    }),
  },
  fc.record({
    kind: fc.constant('list' as const),
    filter: fc.record(
      {
        status: fc.constantFrom(...STATUSES),
        lifecycle: fc.oneof(fc.constantFrom(...LIFECYCLES), fc.subarray(LIFECYCLES)),
        dueBefore: time,
        limit: fc.integer({ min: 1, max: 4 }),
        action: fc.constantFrom('ticket.resolve', 'other'),
      },
      { requiredKeys: [] },
    ),
  }),
  fc.record({ kind: fc.constant('read' as const), id: small }),
);

/** Runs one command; tokens holds every lease token this store handed out, in order. */
async function apply(store: OperationStore, c: Command, tokens: string[]): Promise<unknown> {
  try {
    switch (c.kind) {
      case 'reserve':
        return await store.reserve(
          newOp(c.id, { idempotencyKey: `key-${c.key}`, requestedAt: c.at, input: { n: c.id, s: 'é✓' } }),
          ev('reserved', c.at),
        );
      case 'transition': {
        const guard: TransitionGuard = {};
        if (c.lease !== null) guard.leaseToken = tokens[c.lease] ?? 'no-such-token';
        if (c.attempt !== null) guard.attempt = c.attempt;
        return await store.transition(
          `op-${c.id}`,
          c.from,
          c.patch,
          ev('t', c.at, { detail: { c: 1 } }),
          guard,
        );
      }
      case 'claim': {
        const claims = await store.claimDue(c.limit, c.leaseMs, c.owner, c.now);
        tokens.push(...claims.map((claim) => claim.leaseToken));
        return claims;
      }
      case 'list':
        return await store.list(c.filter);
      case 'read':
        return [await store.get(`op-${c.id}`), await store.events(`op-${c.id}`)];
    }
  } catch (error) {
    return { error: (error as { code?: unknown }).code ?? String(error) };
  }
}

/** Replaces each lease token by its position in the order the store handed them out. */
function renameTokens(value: unknown, tokens: string[]): unknown {
  return JSON.parse(JSON.stringify(value ?? null), (_key, v) =>
    typeof v === 'string' && tokens.includes(v) ? `token-${tokens.indexOf(v)}` : v,
  );
}

describe('sqliteStore matches the memory store', () => {
  it('gives the same answer to every command of random sequences', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 60, size: 'max' }), async (commands) => {
        const db = await openHandle();
        const stores = [memoryStore(), await sqliteStore({ database: db })] as const;
        const tokens: [string[], string[]] = [[], []];
        try {
          for (const c of commands) {
            const [expected, actual] = [
              await apply(stores[0], c, tokens[0]),
              await apply(stores[1], c, tokens[1]),
            ];
            expect(renameTokens(actual, tokens[1]), JSON.stringify(c)).toEqual(
              renameTokens(expected, tokens[0]),
            );
          }
          const all = async (s: OperationStore, t: string[]) =>
            renameTokens(await Promise.all((await s.list()).map(async (r) => [r, await s.events(r.id)])), t);
          expect(await all(stores[1], tokens[1])).toEqual(await all(stores[0], tokens[0]));
        } finally {
          await Promise.all(stores.map((s) => s.close()));
          db.close();
        }
      }),
      { numRuns: 200 },
    );
  }, 60_000);
});
