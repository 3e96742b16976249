import { describe, expect, it } from 'vitest';
import { callsTo, ctx, expectMessageClass, setup } from './support.js';

describe('a throw or timeout is ambiguous: read back first', () => {
  it('response lost after the provider committed: verified, not retried', async () => {
    const { hd, runner } = setup();
    hd.ledger.faults.loseNextResponse = true;
    const c = await runner.run(hd.actions.refundOrder, { orderId: '42', amountCents: 1999 }, ctx);

    expect(callsTo(hd.ledger, 'refund')).toEqual([
      [{ orderId: '42', amountCents: 1999, idempotencyKey: c.idempotencyKey }],
    ]);
    expect(c.status).toBe('verified');
    expect(c.attempt).toBe(1);
    expect(hd.ledger.entries()).toHaveLength(1);
    expect(hd.ledger.refunded('42')).toBe(1999);
    expectMessageClass(c);
  });

  it('request lost before the provider saw it: unknown inside the window, then retried once after it', async () => {
    const { hd, runner } = setup();
    hd.ledger.faults.failNextWrite = true;
    const c = await runner.run(hd.actions.refundOrder, { orderId: '42', amountCents: 1999 }, ctx);

    expect(callsTo(hd.ledger, 'refund')).toHaveLength(1);
    expect(c.status).toBe('unknown');
    expect(c.errorCode).toBe('in_flight');
    expect(c.nextAllowedAction).toBe('poll');
    expect(hd.ledger.entries()).toEqual([]);
    expectMessageClass(c);

    // Inside the window absence still proves nothing.
    hd.clock.advance(1_000);
    expect((await runner.poll(c.operationId)).status).toBe('unknown');
    expect(callsTo(hd.ledger, 'refund')).toHaveLength(1);

    // After it, absence is real; the provider deduplicates on our key, so the one retry is safe.
    hd.clock.advance(hd.actions.refundOrder.maxInFlightMs);
    const later = await runner.poll(c.operationId);
    expect(later.status).toBe('verified');
    expect(later.attempt).toBe(2);
    expect(callsTo(hd.ledger, 'refund')).toHaveLength(2);
    expect(hd.ledger.entries()).toHaveLength(1);
    expectMessageClass(later);
  });

  it('request lost for an action that is not safe to repeat: failed after the window, never retried', async () => {
    const { hd, runner } = setup();
    hd.tickets.faults.failNextWrite = true;
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(c.status).toBe('unknown');
    expect(c.errorCode).toBe('in_flight');

    hd.clock.advance(hd.actions.updateTicket.maxInFlightMs + 1);
    const later = await runner.poll(c.operationId);
    expect(callsTo(hd.tickets, 'update')).toHaveLength(1);
    expect(later.status).toBe('failed');
    expect(later.errorCode).toBe('effect_absent');
    expect(later.nextAllowedAction).toBe('ask_user');
    expect(later.safeToRepeat).toBe(false);
    expect(hd.tickets.writes).toEqual([]);
    expectMessageClass(later);
  });

  it('a late landing inside the window is verified on the next poll, with no second execute', async () => {
    const { hd, runner } = setup();
    hd.ledger.faults.landNextWriteAfterMs = 2_000;
    const c = await runner.run(hd.actions.refundOrder, { orderId: '42', amountCents: 500 }, ctx);
    expect(c.status).toBe('unknown');
    expect(hd.ledger.entries()).toEqual([]);

    hd.clock.advance(3_000);
    const later = await runner.poll(c.operationId);
    expect(later.status).toBe('verified');
    expect(later.attempt).toBe(1);
    expect(callsTo(hd.ledger, 'refund')).toHaveLength(1);
    expect(hd.ledger.entries()).toHaveLength(1);
  });

  it('a retry budget of zero never re-executes', async () => {
    const { createRunner } = await import('../../src/index.js');
    const { hd } = setup();
    const runner = createRunner({ clock: hd.clock, retryBudget: 0 });
    hd.ledger.faults.failNextWrite = true;
    const c = await runner.run(hd.actions.refundOrder, { orderId: '42', amountCents: 500 }, ctx);
    hd.clock.advance(60_000);
    const later = await runner.poll(c.operationId);
    expect(later.status).toBe('failed');
    expect(later.errorCode).toBe('effect_absent');
    expect(callsTo(hd.ledger, 'refund')).toHaveLength(1);
    expect(hd.ledger.entries()).toEqual([]);
  });
});

describe('idempotency', () => {
  it('the same key with the same intent returns the recorded completion without executing', async () => {
    const { hd, runner } = setup();
    const first = await runner.run(hd.actions.refundOrder, { orderId: '42', amountCents: 1999 }, ctx);
    const again = await runner.run(hd.actions.refundOrder, { amountCents: 1999, orderId: '42' }, ctx);

    expect(callsTo(hd.ledger, 'refund')).toHaveLength(1);
    expect(again).toEqual(first);
    expect(again.status).toBe('verified');
    expect(hd.ledger.entries()).toHaveLength(1);
  });

  it('the same key with a different intent is a conflict and executes nothing', async () => {
    const { hd, runner } = setup();
    const key = { ...ctx, idempotencyKey: 'refund-42' };
    const first = await runner.run(hd.actions.refundOrder, { orderId: '42', amountCents: 1999 }, key);
    const other = await runner.run(hd.actions.refundOrder, { orderId: '42', amountCents: 99_999 }, key);

    expect(callsTo(hd.ledger, 'refund')).toHaveLength(1);
    expect(other.status).toBe('failed');
    expect(other.errorCode).toBe('idempotency_conflict');
    expect(other.operationId).toBe(first.operationId);
    expect(hd.ledger.refunded('42')).toBe(1999);
    expectMessageClass(other);
  });

  it('a different scope is a different intent under the same key', async () => {
    const { hd, runner } = setup();
    const key = { ...ctx, idempotencyKey: 'refund-42' };
    await runner.run(hd.actions.refundOrder, { orderId: '42', amountCents: 1 }, key);
    const other = await runner.run(
      hd.actions.refundOrder,
      { orderId: '42', amountCents: 1 },
      { ...key, scope: { tenant: 'globex' } },
    );
    expect(other.errorCode).toBe('idempotency_conflict');
  });

  it('concurrent runs with one key execute once', async () => {
    const { hd, runner } = setup();
    const runs = await Promise.all(
      Array.from({ length: 8 }, () =>
        runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx),
      ),
    );
    expect(callsTo(hd.tickets, 'update')).toHaveLength(1);
    expect(new Set(runs.map((c) => c.operationId)).size).toBe(1);
    expect(runs.every((c) => c.status === 'verified')).toBe(true);
    expect(hd.tickets.writes).toHaveLength(1);
  });

  it('concurrent runners over one store execute once', async () => {
    const { createRunner, memoryStore } = await import('../../src/index.js');
    const { hd } = setup();
    const store = memoryStore();
    const runners = Array.from({ length: 4 }, () => createRunner({ store, clock: hd.clock }));
    const runs = await Promise.all(
      runners.map((r) => r.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx)),
    );
    expect(callsTo(hd.tickets, 'update')).toHaveLength(1);
    expect(hd.tickets.writes).toHaveLength(1);
    const verified = runs.filter((c) => c.status === 'verified');
    expect(verified.length).toBeGreaterThanOrEqual(1);
    for (const c of runs) expect(['verified', 'pending']).toContain(c.status);
    const later = await runners[1]!.poll(runs[0]!.operationId);
    expect(later.status).toBe('verified');
  });
});
