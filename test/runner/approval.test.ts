import { describe, expect, it } from 'vitest';
import { createRunner, defineAction, ReadbackError } from '../../src/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { callsTo, ctx } from './support.js';

/** update_ticket behind an approval gate for closing tickets. */
function gated(policy: () => boolean | Promise<boolean> = () => true) {
  const hd = createHelpdesk();
  hd.tickets.seed([
    { id: 'T-104', tenant: 'acme' },
    { id: 'T-105', tenant: 'acme', status: 'closed' },
  ]);
  const closeTicket = defineAction({
    ...hd.actions.updateTicket,
    name: 'close_ticket',
    needsApproval: policy,
  });
  const runner = createRunner({ clock: hd.clock, random: () => 0.5 });
  return { hd, runner, closeTicket };
}

const input = { id: 'T-104', status: 'closed' as const };

describe('approval gate', () => {
  it('parks as pending / ask_user with nothing executed', async () => {
    const { hd, runner, closeTicket } = gated();
    const c = await runner.run(closeTicket, input, ctx);

    expect(callsTo(hd.tickets, 'update')).toEqual([]);
    expect(c.status).toBe('pending');
    expect(c.errorCode).toBe('awaiting_approval');
    expect(c.nextAllowedAction).toBe('ask_user');
    expect(c.evidence).toMatchObject({ input: { id: 'T-104', status: 'closed' } });
    expect((await runner.store.get(c.operationId))?.lifecycle).toBe('awaiting_approval');
    expect(hd.tickets.writes).toEqual([]);
  });

  it('a baseline that already holds is a no_op without asking anyone', async () => {
    const { hd, runner, closeTicket } = gated();
    const c = await runner.run(closeTicket, { id: 'T-105', status: 'closed' }, ctx);
    expect(c.status).toBe('no_op');
    expect(callsTo(hd.tickets, 'update')).toEqual([]);
  });

  it('after approval the next run executes exactly once, and the decision is on the record', async () => {
    const { hd, runner, closeTicket } = gated();
    const parked = await runner.run(closeTicket, input, ctx);
    const fingerprint = String(parked.evidence?.fingerprint);
    const approved = await runner.approve(parked.operationId, {
      by: 'maria',
      note: 'customer asked',
      fingerprint,
    });
    expect(approved.status).toBe('pending');
    expect(callsTo(hd.tickets, 'update')).toEqual([]);

    const runs = await Promise.all([1, 2, 3].map(() => runner.run(closeTicket, input, ctx)));
    expect(runs.map((c) => c.status)).toEqual(['verified', 'verified', 'verified']);
    expect(callsTo(hd.tickets, 'update')).toHaveLength(1);
    expect((await hd.tickets.get('T-104'))?.status).toBe('closed');

    const events = await runner.store.events(parked.operationId);
    expect(events.find((e) => e.type === 'approved')).toMatchObject({
      actor: 'maria',
      detail: { by: 'maria', note: 'customer asked', fingerprint },
    });
  });

  it('after approval a poll executes it once', async () => {
    const { hd, runner, closeTicket } = gated();
    const parked = await runner.run(closeTicket, input, ctx);
    await runner.approve(parked.operationId, {
      by: 'maria',
      fingerprint: String(parked.evidence?.fingerprint),
    });
    const [a, b] = await Promise.all([runner.poll(parked.operationId), runner.poll(parked.operationId)]);
    expect(a.status).toBe('verified');
    expect(b.status).toBe('verified');
    expect(hd.tickets.writes).toHaveLength(1);
  });

  it('refuses a decision bound to another intent, and a second decision', async () => {
    const { hd, runner, closeTicket } = gated();
    const parked = await runner.run(closeTicket, input, ctx);
    const other = await runner.run(closeTicket, { id: 'T-104', status: 'resolved' }, ctx);
    const wrong = String(other.evidence?.fingerprint);

    await expect(
      runner.approve(parked.operationId, { by: 'maria', fingerprint: wrong }),
    ).rejects.toMatchObject({
      code: 'approval_mismatch',
    });
    const fingerprint = String(parked.evidence?.fingerprint);
    await runner.approve(parked.operationId, { by: 'maria', fingerprint });
    const second = runner.reject(parked.operationId, { by: 'lee', fingerprint });
    await expect(second).rejects.toBeInstanceOf(ReadbackError);
    await expect(second).rejects.toMatchObject({ code: 'not_awaiting_approval' });
    await expect(runner.approve(parked.operationId, { by: '', fingerprint })).rejects.toMatchObject({
      code: 'invalid_options',
      field: 'decision.by',
    });
    expect(hd.tickets.writes).toEqual([]);
  });

  it('a rejection settles failed and nothing ever executes', async () => {
    const { hd, runner, closeTicket } = gated();
    const parked = await runner.run(closeTicket, input, ctx);
    const c = await runner.reject(parked.operationId, {
      by: 'lee',
      note: 'wrong ticket',
      fingerprint: String(parked.evidence?.fingerprint),
    });
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('rejected_by_reviewer');
    expect(c.reason).toBe('rejected by lee: wrong ticket');
    const again = await runner.run(closeTicket, input, ctx);
    expect(again).toEqual(c);
    expect(await runner.poll(parked.operationId)).toEqual(c);
    expect(callsTo(hd.tickets, 'update')).toEqual([]);
  });

  it('a policy that throws fails closed: the call waits for a reviewer', async () => {
    const { hd, runner, closeTicket } = gated(() => {
      throw new Error('policy service down');
    });
    const c = await runner.run(closeTicket, input, ctx);
    expect(c.errorCode).toBe('awaiting_approval');
    expect(hd.tickets.writes).toEqual([]);
  });

  it('a policy that says no approval is needed runs straight through', async () => {
    const { hd, runner, closeTicket } = gated(async () => false);
    const c = await runner.run(closeTicket, input, ctx);
    expect(c.status).toBe('verified');
    expect(hd.tickets.writes).toHaveLength(1);
  });
});
