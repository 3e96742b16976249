import { describe, expect, it } from 'vitest';
import { createRunner, memoryStore, type OperationStore } from '../../src/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { crashMidExecute as crashedRecord } from '../fixtures/jobs.js';
import { callsTo, ctx } from './support.js';

const email = { to: 'ana@example.com', subject: 'Proposal', body: 'Attached.' };

/** A helpdesk whose runner shares a store with a second runner: the "process after the restart". */
function twoProcesses(store: OperationStore = memoryStore()) {
  const hd = createHelpdesk();
  hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
  const before = createRunner({ store, clock: hd.clock, random: () => 0.5 });
  const after = createRunner({
    store,
    clock: hd.clock,
    random: () => 0.5,
    actions: Object.values(hd.actions),
  });
  return { hd, store, before, after };
}

/** Leaves a record as a process killed mid-execute would: reserved, moved to executing, never settled. */
function crashMidExecute(
  store: OperationStore,
  hd: ReturnType<typeof createHelpdesk>,
  action: { name: string; executeTimeoutMs: number; maxInFlightMs: number },
  input: unknown,
  target: string,
) {
  const options = { key: `run-crashed:${action.name}`, scope: { tenant: 'acme' } };
  return crashedRecord(store, hd.clock.now(), action, input, target, undefined, options);
}

describe('reconcile', () => {
  it('settles pending accepted work once the provider shows it delivered', async () => {
    const { hd, before, after } = twoProcesses();
    const c = await before.run(hd.actions.sendEmail, email, { ...ctx, wait: false });
    expect(c.status).toBe('pending');

    hd.clock.advance(hd.mail.deliveryDelayMs + 1_000);
    const report = await after.reconcile({ once: true });
    expect(report).toMatchObject({ claimed: 1, errors: 0 });
    expect(report.byStatus.verified).toBe(1);
    expect((await after.store.get(c.operationId))?.status).toBe('verified');
    expect(callsTo(hd.mail, 'send')).toHaveLength(1);
    expect(hd.mail.inbox('ana@example.com')).toHaveLength(1);
  });

  it('a crash after the effect: read back first, verified, never executed again', async () => {
    const { hd, store, after } = twoProcesses();
    const input = { orderId: '42', amountCents: 700 };
    const { id, key } = await crashMidExecute(store, hd, hd.actions.refundOrder, input, 'order:42');
    await hd.ledger.refund({ ...input, idempotencyKey: key }); // the effect landed before the kill

    hd.clock.advance(hd.actions.refundOrder.executeTimeoutMs + hd.actions.refundOrder.maxInFlightMs);
    await after.reconcile({ once: true });
    expect((await store.get(id))?.status).toBe('verified');
    expect(callsTo(hd.ledger, 'refund')).toHaveLength(1);
    expect(hd.ledger.entries()).toHaveLength(1);
  });

  it('a crash before the effect, safe to repeat: absence proven after the window, re-executed once', async () => {
    const { hd, store, after } = twoProcesses();
    const { id } = await crashMidExecute(
      store,
      hd,
      hd.actions.refundOrder,
      { orderId: '42', amountCents: 700 },
      'order:42',
    );

    hd.clock.advance(hd.actions.refundOrder.executeTimeoutMs + hd.actions.refundOrder.maxInFlightMs);
    await after.reconcile({ once: true });
    const record = await store.get(id);
    expect(record?.status).toBe('verified');
    expect(record?.attempt).toBe(2);
    expect(hd.ledger.entries()).toHaveLength(1);
  });

  it('a crash before the effect, not safe to repeat: failed after the window, never executed', async () => {
    const { hd, store, after } = twoProcesses();
    const { id } = await crashMidExecute(
      store,
      hd,
      hd.actions.updateTicket,
      { id: 'T-104', status: 'resolved' },
      'ticket:T-104',
    );
    // Not yet due: the crashed attempt may still be in flight.
    expect((await after.reconcile({ once: true })).claimed).toBe(0);

    hd.clock.advance(hd.actions.updateTicket.executeTimeoutMs + hd.actions.updateTicket.maxInFlightMs);
    await after.reconcile({ once: true });
    expect((await store.get(id))?.completion).toMatchObject({ status: 'failed', errorCode: 'effect_absent' });
    expect(callsTo(hd.tickets, 'update')).toEqual([]);
    expect(hd.tickets.writes).toEqual([]);
  });

  it('a crash right after reserve: nothing ran, the record stays re-runnable, never executed by the reconciler', async () => {
    const { hd, store, before, after } = twoProcesses();
    const reserved = store.reserve.bind(store);
    let id = '';
    // The "process" dies after the reserve: the drive never gets the record back.
    store.reserve = async (op, event) => {
      const result = await reserved(op, event);
      id = result.record.id;
      throw new Error('killed');
    };
    const died = await before.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(died).toMatchObject({
      status: 'failed',
      errorCode: 'store_unavailable',
      nextAllowedAction: 'retry',
    });
    store.reserve = reserved;

    hd.clock.advance(60_000);
    const report = await after.reconcile({ once: true });
    expect(report.claimed).toBe(1);
    expect((await store.get(id))?.completion).toMatchObject({
      status: 'failed',
      errorCode: 'not_executed',
      nextAllowedAction: 'retry',
    });
    expect(callsTo(hd.tickets, 'update')).toEqual([]);

    const rerun = await after.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(rerun.operationId).toBe(id);
    expect(rerun.status).toBe('verified');
    expect(hd.tickets.writes).toHaveLength(1);
  });

  it('a lapsed lease cannot complete an operation', async () => {
    const { hd, store, before, after } = twoProcesses();
    const c = await before.run(hd.actions.sendEmail, email, { ...ctx, wait: false });
    hd.clock.advance(5_000);
    const [zombie] = await store.claimDue(1, 1_000, 'zombie', hd.clock.now());
    expect(zombie?.record.id).toBe(c.operationId);

    hd.clock.advance(2_000); // the zombie's lease lapses; another worker takes over
    await after.reconcile({ once: true, owner: 'healthy' });
    expect((await store.get(c.operationId))?.status).toBe('verified');

    const late = await store.transition(
      c.operationId,
      ['accepted', 'running', 'settled'],
      { status: 'failed' },
      {
        type: 'late',
        at: hd.clock.now(),
        from: null,
        to: null,
        status: 'failed',
        actor: 'zombie',
        attempt: 1,
      },
      { leaseToken: zombie!.leaseToken },
    );
    expect(late).toBeNull();
    expect((await store.get(c.operationId))?.status).toBe('verified');
  });

  it('drives many due operations, each effect exactly once', async () => {
    const { hd, before, after } = twoProcesses();
    const ids: string[] = [];
    for (let i = 0; i < 30; i++) {
      const c = await before.run(
        hd.actions.sendEmail,
        { ...email, to: `u${i}@example.com` },
        { ...ctx, wait: false },
      );
      ids.push(c.operationId);
    }
    hd.clock.advance(10_000);
    const report = await after.reconcile({ once: true, concurrency: 4 });
    expect(report.byStatus.verified).toBe(30);
    expect(report.rounds).toBeGreaterThanOrEqual(8);
    expect(hd.mail.messages).toHaveLength(30);
    expect(hd.mail.messages.every((m) => m.status === 'delivered')).toBe(true);
    expect(callsTo(hd.mail, 'send')).toHaveLength(30);
  });

  it('never claims records whose action it does not know, and stops when its signal aborts', async () => {
    const { hd, store, before, after } = twoProcesses();
    const pending = await before.run(hd.actions.sendEmail, email, { ...ctx, wait: false });
    hd.clock.advance(5_000);
    // A reconciler deployed with other actions (or none) leaves the email unleased, not held for a lease.
    const stranger = createRunner({ store, clock: hd.clock, actions: [hd.actions.updateTicket] });
    const report = await stranger.reconcile({ once: true });
    expect(report.claimed).toBe(0);
    expect(report.unknownAction).toBe(0);
    const record = await store.get(pending.operationId);
    expect(record?.leaseOwner).toBeNull();
    expect((await store.events(pending.operationId)).map((e) => e.type)).not.toContain('claimed');
    // So the reconciler that knows it settles it at once, at the same moment.
    expect((await after.reconcile({ once: true })).byStatus.verified).toBe(1);

    const stop = new AbortController();
    stop.abort();
    expect((await stranger.reconcile({ signal: stop.signal })).rounds).toBe(0);
  });

  it('leaves a record of an unknown action leased when a custom store ignores the action filter', async () => {
    const { hd, store, before, after } = twoProcesses();
    const pending = await before.run(hd.actions.sendEmail, email, { ...ctx, wait: false });
    hd.clock.advance(5_000);
    // A store written before the filter existed: it claims any action.
    const unfiltered: OperationStore = {
      ...store,
      claimDue: (limit, leaseMs, owner, now) => store.claimDue(limit, leaseMs, owner, now),
    };
    const stranger = createRunner({ store: unfiltered, clock: hd.clock, actions: [hd.actions.updateTicket] });
    const report = await stranger.reconcile({ once: true, leaseMs: 30_000 });
    expect(report.unknownAction).toBe(1);
    expect(report.byStatus.verified).toBe(0);
    expect(report.claimed).toBe(1);
    expect((await store.get(pending.operationId))?.leaseOwner).toEqual(expect.any(String));
    // Under the stranger's lease nobody drives it; once the lease lapses, the reconciler that knows it does.
    expect((await after.reconcile({ once: true })).byStatus.verified).toBe(0);
    hd.clock.advance(30_000);
    expect((await after.reconcile({ once: true })).byStatus.verified).toBe(1);
  });

  it('refuses nonsense options', async () => {
    const runner = createRunner();
    await expect(runner.reconcile({ concurrency: 0 })).rejects.toMatchObject({
      code: 'invalid_options',
      field: 'concurrency',
    });
    await expect(runner.reconcile({ leaseMs: Number.NaN })).rejects.toMatchObject({ field: 'leaseMs' });
  });
});
