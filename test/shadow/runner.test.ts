import { describe, expect, it } from 'vitest';
import { defineAction } from '../../src/contract/define.js';
import { ReadbackError } from '../../src/errors.js';
import { isAccepted } from '../../src/runner/markers.js';
import { shadowVerdict } from '../../src/runner/shadow.js';
import { ctx, setup, shadowOf } from './support.js';

describe('shadow mode: the live tool is unchanged', () => {
  it('a soft-failed write returns the tool’s own result, and the record says claimed success, verified failed', async () => {
    const { hd, runner } = setup({ shadow: true });
    hd.tickets.faults.softFailNextWrite = true;
    const out = await runner.shadow(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);

    // The agent gets exactly what the tool said: ok, with a version the ticket never reached.
    expect(out.executed).toBe(true);
    expect(out.result).toEqual({ ok: true, version: 2 });
    const ticket = await hd.tickets.get('T-104');
    expect(ticket).toMatchObject({ status: 'open', version: 1 });

    expect(out.completion.status).toBe('failed');
    expect(out.completion.shadow).toEqual({ claimed: 'success', status: 'failed', agrees: false });
    expect(out.completion.message).toMatch(/^Shadow observation for operators, not proof/);
    const record = await runner.store.get(out.completion.operationId);
    expect(record?.completion?.shadow).toEqual({ claimed: 'success', status: 'failed', agrees: false });
    const settled = (await runner.store.events(out.completion.operationId)).find((e) => e.type === 'settled');
    expect(settled?.detail?.shadow).toEqual({ claimed: 'success', status: 'failed', agrees: false });
    expect(
      (await runner.store.events(out.completion.operationId)).map((e) => e.detail?.shadowClaim),
    ).toContain('success');
  });

  it('a good write returns the tool’s result and agrees', async () => {
    const { hd, runner } = setup({ shadow: true });
    const out = await runner.shadow(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(out.result).toEqual({ ok: true, version: 2 });
    expect((await hd.tickets.get('T-104'))?.status).toBe('resolved');
    expect(out.completion.status).toBe('verified');
    expect(out.completion.shadow).toEqual({ claimed: 'success', status: 'verified', agrees: true });
  });

  it('a rejection marker is returned as is and agrees with a failed read-back', async () => {
    const { hd, runner } = setup({ shadow: true });
    const out = await runner.shadow(
      hd.actions.updateTicket,
      { id: 'T-104', status: 'resolved', expectedVersion: 7 },
      ctx,
    );
    expect(out.result).toMatchObject({ code: 'version_conflict', raw: { ok: false, currentVersion: 1 } });
    expect(out.completion.shadow).toEqual({ claimed: 'rejected', status: 'failed', agrees: true });
    expect((await hd.tickets.get('T-104'))?.status).toBe('open');
  });

  it('a thrown error is re-thrown unchanged after the record is written; a write that landed anyway disagrees', async () => {
    const { hd, runner } = setup({ shadow: true });
    hd.tickets.faults.landNextWriteAfterMs = 0;
    let thrown: unknown;
    try {
      await runner.shadow(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    } catch (error) {
      thrown = error;
    }
    // The fake's own transport error, not a readback wrapper.
    expect(thrown).toBeInstanceOf(Error);
    expect(thrown).not.toBeInstanceOf(ReadbackError);
    expect((thrown as NodeJS.ErrnoException).code).toBe('ETIMEDOUT');
    expect((await hd.tickets.get('T-104'))?.status).toBe('resolved');
    const [record] = await runner.store.list({ action: 'update_ticket' });
    expect(record?.completion?.status).toBe('verified');
    expect(record?.completion?.shadow).toEqual({ claimed: 'error', status: 'verified', agrees: false });
  });

  it("readback's execute deadline does not apply: a live tool slower than executeTimeoutMs still returns its own result", async () => {
    const { hd, runner } = setup({ shadow: true });
    const slow = defineAction({
      ...hd.actions.updateTicket,
      name: 'slow_update_ticket',
      executeTimeoutMs: 1_000,
      async execute(input, stepCtx) {
        await hd.clock.sleep(5_000);
        return hd.actions.updateTicket.execute(input, stepCtx);
      },
    });
    // The fake clock runs sleepers in deadline order: readback's 1 s deadline would fire before the 5 s call.
    const shadow = await runner.shadow(slow, { id: 'T-104', status: 'resolved' }, ctx);
    expect(shadow.result).toMatchObject({ ok: true });
    expect((await hd.tickets.get('T-104'))?.status).toBe('resolved');
    expect(shadow.completion.shadow).toEqual({ claimed: 'success', status: 'verified', agrees: true });
  });

  it('a thrown error whose write never lands stays undecided, then agrees once absence is proven, and is never repeated', async () => {
    const { hd, runner } = setup({ shadow: true });
    hd.ledger.faults.failNextWrite = true;
    await expect(
      runner.shadow(hd.actions.refundOrder, { orderId: 'A-1', amountCents: 500 }, ctx),
    ).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    const [open] = await runner.store.list({ action: 'refund_order' });
    expect(open?.completion?.shadow).toEqual({ claimed: 'error', status: 'unknown', agrees: null });

    const refund = hd.actions.refundOrder;
    hd.clock.advance(refund.executeTimeoutMs + refund.maxInFlightMs);
    await runner.reconcile({ once: true });
    const settled = await runner.store.get(open!.id);
    expect(settled?.completion?.status).toBe('failed');
    expect(settled?.completion?.shadow).toEqual({ claimed: 'error', status: 'failed', agrees: true });
    // refund_order is safe to repeat, yet a shadow run never re-executes the live tool's call.
    expect(hd.ledger.calls.filter((c) => c.method === 'refund')).toHaveLength(1);
    expect(settled?.attempt).toBe(1);
  });

  it('accepted mode returns the tool’s result at once and leaves the record pending for the reconciler', async () => {
    const { hd, runner } = setup({ shadow: true });
    const out = await runner.shadow(
      hd.actions.sendEmail,
      { to: 'ana@example.com', subject: 'Hi', body: 'Hello.' },
      ctx,
    );
    expect(isAccepted(out.result)).toBe(true);
    expect(out.completion.status).toBe('pending');
    expect(out.completion.shadow).toEqual({ claimed: 'accepted', status: 'pending', agrees: null });
    expect(hd.mail.calls.filter((c) => c.method === 'lookup')).toHaveLength(0);
    const record = await runner.store.get(out.completion.operationId);
    expect(record?.lifecycle).toBe('accepted');

    hd.mail.faults.nextOutcome = 'dropped';
    const lost = await runner.shadow(
      hd.actions.sendEmail,
      { to: 'bo@example.com', subject: 'Hi', body: 'x' },
      ctx,
    );
    expect(isAccepted(lost.result)).toBe(true);

    hd.clock.advance(hd.mail.deliveryDelayMs + 1_000);
    await runner.reconcile({ once: true });
    const done = await runner.store.get(out.completion.operationId);
    expect(hd.mail.inbox('ana@example.com')).toHaveLength(1);
    expect(done?.completion?.status).toBe('verified');
    expect(done?.completion?.shadow).toEqual({ claimed: 'accepted', status: 'verified', agrees: true });
    // The provider accepted this one and then dropped it: the tool's "accepted" claim was not borne out.
    const dropped = await runner.store.get(lost.completion.operationId);
    expect(hd.mail.inbox('bo@example.com')).toHaveLength(0);
    expect(dropped?.completion?.shadow).toEqual({ claimed: 'accepted', status: 'failed', agrees: false });
  });

  it('readback gates nothing in shadow: an already-satisfied ticket is still written, and repeats are not joined', async () => {
    const { hd, runner } = setup({ shadow: true });
    const input = { id: 'T-105', status: 'resolved' } as const;
    const first = await runner.shadow(hd.actions.updateTicket, input, ctx);
    const second = await runner.shadow(hd.actions.updateTicket, input, ctx);
    // Without shadow the first would be a no_op and the second joined; the live tool wrote twice.
    expect(hd.tickets.writes.map((w) => w.ticketId)).toEqual(['T-105', 'T-105']);
    expect(first.completion.operationId).not.toBe(second.completion.operationId);
    expect(first.completion.shadow?.agrees).toBe(true);
    expect(second.completion.shadow?.agrees).toBe(true);
  });

  it('an input readback cannot use is reported, not executed, and says so', async () => {
    const { hd, runner } = setup({ shadow: true });
    const out = await runner.shadow(hd.actions.updateTicket, { id: 'T-104', status: 'deleted' }, ctx);
    expect(out.executed).toBe(false);
    expect(out.result).toBeUndefined();
    expect(out.completion).toMatchObject({ status: 'failed', errorCode: 'invalid_input' });
    expect(out.completion.shadow).toEqual({ claimed: 'none', status: 'failed', agrees: null });
    expect(hd.tickets.calls.filter((c) => c.method === 'update')).toHaveLength(0);
  });
});

describe('shadow mode: where it is switched on', () => {
  it('per action: only that action is shadowed, the others run normally', async () => {
    const { hd, runner } = setup();
    const shadowTicket = shadowOf(hd.actions.updateTicket);
    hd.tickets.faults.softFailNextWrite = true;
    const out = await runner.shadow(shadowTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(out.result).toEqual({ ok: true, version: 2 });
    expect(out.completion.shadow?.agrees).toBe(false);

    const normal = await runner.run(hd.actions.refundOrder, { orderId: 'A-2', amountCents: 100 }, ctx);
    expect(normal.status).toBe('verified');
    expect(normal.shadow).toBeUndefined();
    expect(normal.message).not.toMatch(/shadow/i);
  });

  it('run() refuses a shadow action, and shadow() refuses an action that is not in shadow mode', async () => {
    const { hd, runner } = setup();
    const input = { id: 'T-104', status: 'resolved' };
    await expect(runner.run(shadowOf(hd.actions.updateTicket), input, ctx)).rejects.toMatchObject({
      code: 'invalid_options',
      field: 'action.shadow',
    });
    await expect(runner.shadow(hd.actions.updateTicket, input, ctx)).rejects.toMatchObject({
      code: 'invalid_options',
      field: 'action.shadow',
    });
    const wide = setup({ shadow: true });
    await expect(wide.runner.run(wide.hd.actions.updateTicket, input, ctx)).rejects.toMatchObject({
      field: 'shadow',
    });
    // Nothing was executed by any refused call.
    expect(hd.tickets.calls.filter((c) => c.method === 'update')).toHaveLength(0);
    expect(wide.hd.tickets.calls.filter((c) => c.method === 'update')).toHaveLength(0);
  });

  it('a normal run may not borrow the shadow key prefix, which marks records as shadow', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(
      hd.actions.updateTicket,
      { id: 'T-104', status: 'resolved' },
      { ...ctx, idempotencyKey: 'shadow:mine' },
    );
    expect(c).toMatchObject({ status: 'failed', errorCode: 'invalid_input' });
    expect(c.reason).toContain('reserved for shadow mode');
    expect(hd.tickets.calls.filter((call) => call.method === 'update')).toHaveLength(0);
  });

  it('validates the option on the runner and on the contract', () => {
    const { hd } = setup();
    expect(() => setup({ shadow: 'yes' as unknown as boolean })).toThrow(/shadow: must be true or false/);
    expect(() => defineAction({ ...hd.actions.updateTicket, shadow: 1 as unknown as boolean })).toThrow(
      /action "update_ticket"\.shadow: must be true or false; got 1/,
    );
  });
});

describe('shadowVerdict', () => {
  it('follows the agreement table', () => {
    const agrees = (
      claimed: Parameters<typeof shadowVerdict>[0],
      status: Parameters<typeof shadowVerdict>[1],
    ) => shadowVerdict(claimed, status).agrees;
    expect(agrees('success', 'verified')).toBe(true);
    expect(agrees('success', 'no_op')).toBe(true);
    expect(agrees('success', 'failed')).toBe(false);
    expect(agrees('success', 'partial')).toBe(false);
    expect(agrees('accepted', 'verified')).toBe(true);
    expect(agrees('accepted', 'failed')).toBe(false);
    expect(agrees('failure', 'failed')).toBe(true);
    expect(agrees('rejected', 'failed')).toBe(true);
    expect(agrees('error', 'verified')).toBe(false);
    expect(agrees('failure', 'partial')).toBe(false);
    expect(agrees('failure', 'no_op')).toBe(false);
    for (const status of ['pending', 'unknown'] as const) expect(agrees('success', status)).toBeNull();
    expect(agrees('none', 'failed')).toBeNull();
  });
});
