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

  it('refuses a who or why that shows nothing, and a name with bidi controls, recording nothing', async () => {
    const { hd, runner } = setup();
    hd.mail.faults.nextOutcome = 'stuck';
    const c = await runner.run(
      hd.actions.sendEmail,
      { to: 'ana@example.com', subject: 'Hi', body: 'x' },
      ctx,
    );
    const now = hd.clock.now();
    const resolve = (note: string, by: string) =>
      resolveByOperator(runner.store, c.operationId, { status: 'verified', note, by }, now);
    for (const invisible of ['\u200b', '\u2060\u200d', '\ufe0f', ' \u00ad ', '\u3164', '\u{e0100}']) {
      await expect(resolve(invisible, 'maria')).rejects.toMatchObject({
        code: 'invalid_options',
        field: 'note',
      });
      await expect(resolve('checked the queue', invisible)).rejects.toMatchObject({
        code: 'invalid_options',
        field: 'by',
      });
    }
    for (const bidi of ['\u202e', '\u2066', '\u200f', '\u061c']) {
      await expect(resolve('checked the queue', `maria${bidi}`)).rejects.toMatchObject({
        code: 'invalid_options',
        field: 'by',
        message: 'by: must not contain bidirectional control characters',
      });
    }
    expect((await runner.store.get(c.operationId))?.lifecycle).not.toBe('settled');
    // Right-to-left text in the note is a reason like any other.
    await expect(resolve('the provider said \u202bلا\u202c', 'maria')).resolves.toMatchObject({
      status: 'verified',
    });
  });
});
