import { describe, expect, it } from 'vitest';
import { defineAction } from '../../src/index.js';
import { ctx, ofType, tracedSetup } from './support.js';

/** update_ticket behind an approval gate, on a traced runner. */
function gated() {
  const setup = tracedSetup();
  const closeTicket = defineAction({
    ...setup.hd.actions.updateTicket,
    name: 'close_ticket',
    needsApproval: () => true,
  });
  return { ...setup, closeTicket };
}

describe('reviewer decisions in the run record', () => {
  it('approve is traced as a review call: who decided, the move back to requested, the completion', async () => {
    const { runner, events, closeTicket } = gated();
    const parked = await runner.run(closeTicket, { id: 'T-104', status: 'closed' }, ctx);
    expect(parked.errorCode).toBe('awaiting_approval');
    const record = await runner.store.get(parked.operationId);
    events.length = 0;

    await runner.approve(parked.operationId, { by: 'lead@acme', fingerprint: record!.fingerprint });
    expect(events.map((e) => e.type)).toEqual([
      'run.started',
      'permission.decided',
      'state.transition',
      'completion',
    ]);
    expect(ofType(events, 'run.started')[0]).toMatchObject({
      entry: 'review',
      actor: 'lead@acme',
      operationId: parked.operationId,
    });
    expect(ofType(events, 'permission.decided')[0]).toMatchObject({ allowed: true, policy: true });
    expect(ofType(events, 'state.transition')[0]).toMatchObject({
      event: 'approved',
      from: 'awaiting_approval',
      to: 'requested',
    });
    // The approval itself executed nothing: the ticket is still open until the next run or poll.
    expect(ofType(events, 'execute.started')).toEqual([]);
  });

  it('reject is traced with the reviewer and note, settling failed; a refused second decision records nothing', async () => {
    const { runner, events, closeTicket, hd } = gated();
    const parked = await runner.run(closeTicket, { id: 'T-104', status: 'closed' }, ctx);
    const record = await runner.store.get(parked.operationId);
    events.length = 0;

    const c = await runner.reject(parked.operationId, {
      by: 'lead@acme',
      note: 'customer asked to keep it open',
      fingerprint: record!.fingerprint,
    });
    expect(c.status).toBe('failed');
    expect(ofType(events, 'permission.decided')[0]).toMatchObject({
      allowed: false,
      reason: 'rejected by lead@acme: customer asked to keep it open',
    });
    expect(ofType(events, 'state.transition')[0]).toMatchObject({
      event: 'rejected',
      to: 'settled',
      status: 'failed',
    });
    expect(ofType(events, 'completion')[0]).toMatchObject({ operationId: parked.operationId });
    expect((await hd.tickets.get('T-104'))?.status).toBe('open');

    // A second decision is refused (misuse): nothing settles again, and the record says so.
    events.length = 0;
    await expect(
      runner.approve(parked.operationId, { by: 'x', fingerprint: record!.fingerprint }),
    ).rejects.toMatchObject({ code: 'not_awaiting_approval' });
    expect(events).toEqual([]);
  });
});
