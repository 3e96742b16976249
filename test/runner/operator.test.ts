import { describe, expect, it } from 'vitest';
import { resolveByOperator } from '../../src/index.js';
import { ctx, setup } from './support.js';

describe('operator resolution', () => {
  it('settles an open operation as decided, keeping every earlier event', async () => {
    const { hd, runner } = setup();
    hd.mail.faults.nextOutcome = 'stuck';
    const c = await runner.run(
      hd.actions.sendEmail,
      { to: 'ana@example.com', subject: 'Hi', body: 'x' },
      ctx,
    );
    expect(c.status).toBe('unknown');
    const before = await runner.store.events(c.operationId);

    const resolved = await resolveByOperator(
      runner.store,
      c.operationId,
      { status: 'failed', note: 'provider confirmed the queue was lost', by: 'ops-oncall' },
      hd.clock.now(),
    );
    expect(resolved).toMatchObject({ status: 'failed', errorCode: 'operator_resolved' });
    expect(resolved.reason).toBe('resolved as failed by ops-oncall: provider confirmed the queue was lost');
    const after = await runner.store.events(c.operationId);
    expect(after.slice(0, before.length)).toEqual(before);
    expect(after.at(-1)).toMatchObject({
      type: 'operator_resolved',
      actor: 'ops-oncall',
      detail: { previousStatus: 'unknown' },
    });
    expect(await runner.poll(c.operationId)).toEqual(resolved);
  });

  it('refuses a settled operation and decisions without who and why', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    const now = hd.clock.now();
    await expect(
      resolveByOperator(runner.store, c.operationId, { status: 'failed', note: 'x', by: 'y' }, now),
    ).rejects.toMatchObject({ code: 'already_settled' });
    await expect(
      resolveByOperator(runner.store, 'op-missing', { status: 'failed', note: 'x', by: 'y' }, now),
    ).rejects.toMatchObject({ code: 'unknown_operation' });
    await expect(
      resolveByOperator(runner.store, c.operationId, { status: 'failed', note: ' ', by: 'y' }, now),
    ).rejects.toMatchObject({ code: 'invalid_options', field: 'note' });
    await expect(
      resolveByOperator(runner.store, c.operationId, { status: 'done' as 'failed', note: 'x', by: 'y' }, now),
    ).rejects.toMatchObject({ field: 'status' });
    expect((await runner.store.get(c.operationId))?.status).toBe('verified');
  });
});
