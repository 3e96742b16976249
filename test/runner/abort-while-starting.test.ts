// A caller that aborts while a move to executing is being written (by the reserve that starts the record, by the
// drive's own move after a baseline read, or by a retry's) must get what the same abort a moment earlier gets:
// nothing executed; a first attempt failed and re-runnable under the same key, a retry unknown and not spent. The
// store writes the move before the abort lands, so it is withdrawn; the stores here are real, and the truth is
// whether the target was ever written. A reconciler's stop works the same way for the retries it would make.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/postgres/index.js';
import { createRunner } from '../../src/runner/runner.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { memoryStore } from '../../src/store/memory.js';
import type { OperationStore } from '../../src/store/types.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { trail } from '../fixtures/reserve-start.js';
import { setStatusAction } from '../fixtures/set-status.js';
import { tempDir } from '../fixtures/sqlite/support.js';
import { pgSuite } from '../postgres/support.js';
import { callsTo, ctx } from './support.js';

const { available: pgAvailable, tempSchema, tempPool } = await pgSuite();
const dir = tempDir('abort-start');
afterAll(() => dir.remove());

/**
 * The store, except that the controller aborts right after a write that moves a record to executing was handed
 * to it: a reserve carrying a start, or a transition to executing. The write itself goes through unchanged.
 */
function abortingOnStart(store: OperationStore, controller: AbortController): OperationStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'reserve') {
        return (...args: Parameters<OperationStore['reserve']>) => {
          const written = target.reserve(...args);
          if (args[2] !== undefined) controller.abort(new Error('user cancelled'));
          return written;
        };
      }
      if (key === 'transition') {
        return (...args: Parameters<OperationStore['transition']>) => {
          const written = target.transition(...args);
          if (args[2].lifecycle === 'executing') controller.abort(new Error('user cancelled'));
          return written;
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

type Opened = { store: OperationStore; close: () => Promise<void> };
const stores: [string, boolean, () => Promise<Opened>][] = [
  ['memory', true, async () => ({ store: memoryStore(), close: async () => {} })],
  ...[false, true].map((groupCommit): [string, boolean, () => Promise<Opened>] => [
    `sqlite (groupCommit: ${groupCommit})`,
    true,
    async () => {
      const store = await sqliteStore({ path: join(dir.fresh(), 'ops.db') }, { groupCommit });
      return { store, close: () => store.close() };
    },
  ]),
  [
    'postgres',
    pgAvailable,
    async () => {
      const store = await postgresStore({ pool: tempPool(4), schema: tempSchema() });
      return { store, close: () => store.close() };
    },
  ],
];

describe.each(stores)('abort while the start is written: %s', (_name, available, open) => {
  for (const withBaseline of [false, true]) {
    const how = withBaseline ? "the drive's own move, after a baseline read" : 'the reserve that starts it';
    it.skipIf(!available)(`by ${how}: nothing executes, and the same call runs later`, async () => {
      const { store, close } = await open();
      const rows = new Map<string, string>();
      const action = setStatusAction(rows, { withBaseline });
      const controller = new AbortController();
      const aborting = createRunner({ store: abortingOnStart(store, controller) });

      const c = await aborting.run(
        action,
        { id: 'a', status: 'done' },
        { runId: 'r', signal: controller.signal },
      );
      expect(controller.signal.aborted).toBe(true);
      expect(rows.has('a')).toBe(false);
      expect(c).toMatchObject({
        status: 'failed',
        errorCode: 'aborted',
        attempt: 0,
        safeToRepeat: true,
        nextAllowedAction: 'retry',
      });
      const record = await store.get(c.operationId);
      expect(record).toMatchObject({
        lifecycle: 'requested',
        attempt: 0,
        executedAt: null,
        nextPollAt: null,
      });
      expect(record?.completion).toEqual(c);
      expect(await trail(store, c.operationId)).toEqual([
        '1:reserved:->requested@0',
        '2:executing:requested>executing@1',
        '3:withdrawn:executing>requested@0',
      ]);

      // Nothing ran and nobody is waiting: a reconciler leaves it alone.
      const runner = createRunner({ store, actions: [action] });
      await runner.reconcile({ once: true });
      expect(rows.has('a')).toBe(false);

      // The same call, same key, runs it once: the first attempt is attempt 1.
      const again = await runner.run(action, { id: 'a', status: 'done' }, { runId: 'r' });
      expect(again).toMatchObject({ status: 'verified', operationId: c.operationId, attempt: 1 });
      expect(rows.get('a')).toBe('done');
      expect((await trail(store, c.operationId)).slice(3)).toEqual([
        '4:executing:requested>executing@1',
        '5:settled:executing>settled@1',
      ]);
      await close();
    });
  }
});

/**
 * A refund whose request was lost (nothing landed), `past` ms after it: past its in-flight window, the next drive
 * proves absence and retries it (a reconciler also needs it due: past the execute timeout too).
 */
async function lostRefund(past: (action: { maxInFlightMs: number; executeTimeoutMs: number }) => number) {
  const hd = createHelpdesk();
  const store = memoryStore();
  const runner = createRunner({
    store,
    clock: hd.clock,
    random: () => 0.5,
    actions: Object.values(hd.actions),
  });
  hd.ledger.faults.failNextWrite = true;
  const c = await runner.run(hd.actions.refundOrder, { orderId: '42', amountCents: 1999 }, ctx);
  expect(c).toMatchObject({ status: 'unknown', errorCode: 'in_flight', attempt: 1 });
  hd.clock.advance(past(hd.actions.refundOrder));
  const before = (await store.get(c.operationId))!;
  return { hd, store, runner, id: c.operationId, before };
}

describe('abort while a retry is written', () => {
  it('through poll: the retry is withdrawn, not spent, and a later poll makes it', async () => {
    const { hd, store, runner, id, before } = await lostRefund((a) => a.maxInFlightMs);
    const controller = new AbortController();
    const aborting = createRunner({
      store: abortingOnStart(store, controller),
      clock: hd.clock,
      random: () => 0.5,
      actions: Object.values(hd.actions),
    });

    const c = await aborting.poll(id, { signal: controller.signal });
    expect(controller.signal.aborted).toBe(true);
    expect(callsTo(hd.ledger, 'refund')).toHaveLength(1);
    expect(c).toMatchObject({
      status: 'unknown',
      errorCode: 'aborted',
      attempt: 1,
      nextAllowedAction: 'poll',
    });
    const record = (await store.get(id))!;
    expect(record).toMatchObject({
      lifecycle: 'executing',
      attempt: 1,
      executedAt: before.executedAt,
      inFlightUntil: before.inFlightUntil,
    });
    // The read had proven the retry safe: it is due again at once, not after an undecided read's backoff.
    expect(record.nextPollAt).toBe(hd.clock.now());
    expect(Date.parse(c.pollAfter!)).toBe(record.nextPollAt);
    expect((await trail(store, id)).slice(-2)).toEqual([
      expect.stringMatching(/^\d+:executing:executing>executing@2$/),
      expect.stringMatching(/^\d+:withdrawn:executing>executing@1$/),
    ]);

    // The retry was not spent: the next poll proves absence again and makes it, once.
    const later = await runner.poll(id);
    expect(later).toMatchObject({ status: 'verified', attempt: 2 });
    expect(callsTo(hd.ledger, 'refund')).toHaveLength(2);
    expect(hd.ledger.entries()).toHaveLength(1);
  });
});

describe('a reconciler that is stopping starts no retry', () => {
  /** The store, except that `stop` aborts right after the call `when` picks was handed to it. */
  function stoppingAfter(
    store: OperationStore,
    stop: AbortController,
    when: 'claimDue' | 'retry',
  ): OperationStore {
    return new Proxy(store, {
      get(target, key) {
        const value = Reflect.get(target, key, target);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const result = (value as (...a: unknown[]) => unknown).apply(target, args);
          const retrying = key === 'transition' && (args[2] as { attempt?: number }).attempt === 2;
          if ((when === 'claimDue' && key === 'claimDue') || (when === 'retry' && retrying)) stop.abort();
          return result;
        };
      },
    });
  }

  for (const when of ['claimDue', 'retry'] as const) {
    const at = when === 'claimDue' ? 'right after its claim' : "while the retry's move is written";
    it(`stopped ${at}: the claimed drive reads, writes and gives its lease back, and the retry waits for the next run`, async () => {
      const { hd, store, runner, id } = await lostRefund((a) => a.maxInFlightMs + a.executeTimeoutMs);
      const stop = new AbortController();
      const reconciler = createRunner({
        store: stoppingAfter(store, stop, when),
        clock: hd.clock,
        random: () => 0.5,
        actions: Object.values(hd.actions),
      });
      const report = await reconciler.reconcile({ once: true, signal: stop.signal });
      expect(stop.signal.aborted).toBe(true);
      expect(report).toMatchObject({ claimed: 1, byStatus: { unknown: 1 }, errors: 0 });
      expect(callsTo(hd.ledger, 'refund')).toHaveLength(1);
      const record = (await store.get(id))!;
      expect(record).toMatchObject({
        lifecycle: 'executing',
        attempt: 1,
        leaseToken: null,
        leaseOwner: null,
      });
      expect(record.completion).toMatchObject({
        status: 'unknown',
        errorCode: 'aborted',
        reason: 'the reconciler stopped before the retry',
      });
      // Due at once for the next run (a replacement process in a rolling deploy), not up to an hour later.
      expect(record.nextPollAt).toBe(hd.clock.now());
      const types = (await store.events(id)).map((e) => e.type);
      expect(types.at(-1)).toBe(when === 'retry' ? 'withdrawn' : 'status');

      // The next run, not stopping, makes the retry at once.
      await runner.reconcile({ once: true });
      expect(await store.get(id)).toMatchObject({ status: 'verified', attempt: 2 });
      expect(callsTo(hd.ledger, 'refund')).toHaveLength(2);
      expect(hd.ledger.entries()).toHaveLength(1);
    });
  }
});
