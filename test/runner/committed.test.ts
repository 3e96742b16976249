import { describe, expect, it } from 'vitest';
import { callsTo, ctx, expectMessageClass, setup } from './support.js';

describe('committed mode against the ticket system', () => {
  it('verified change: executes once, reads back the fresh state and says so', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);

    expect(callsTo(hd.tickets, 'update')).toEqual([
      ['T-104', { status: 'resolved' }, { tenant: 'acme', operationId: c.operationId }],
    ]);
    expect(c.status).toBe('verified');
    expect(c.checks.map((k) => [k.name, k.pass])).toEqual([
      ['target', true],
      ['scope', true],
      ['status', true],
      ['fresh:version_above_baseline', true],
    ]);
    expect(c.evidence).toMatchObject({ status: 'resolved' });
    expect(c.observedAt).toBe(new Date(hd.clock.now()).toISOString());
    expect(c.nextAllowedAction).toBe('none');
    expect((await hd.tickets.get('T-104'))?.status).toBe('resolved');
    expect(hd.tickets.writes.map((w) => w.operationId)).toEqual([c.operationId]);
    expectMessageClass(c);
  });

  it('validation failure: names the field and executes nothing', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'done' }, ctx);

    expect(hd.tickets.calls).toEqual([]);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('invalid_input');
    expect(c.reason).toMatch(/^status: expected one of/);
    expect(c.safeToRepeat).toBe(true);
    expect(c.nextAllowedAction).toBe('repair');
    expect(hd.tickets.writes).toEqual([]);
    expect(await runner.store.list()).toEqual([]);
    expectMessageClass(c);
  });

  it('no-op: the target already holds, nothing is executed', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-105', status: 'resolved' }, ctx);

    expect(callsTo(hd.tickets, 'update')).toEqual([]);
    expect(callsTo(hd.tickets, 'get')).toEqual([['T-105']]);
    expect(c.status).toBe('no_op');
    expect(c.attempt).toBe(0);
    expect(hd.tickets.writes).toEqual([]);
    expect((await runner.store.get(c.operationId))?.lifecycle).toBe('settled');
    expectMessageClass(c);
  });

  it('readback mismatch: the write said ok but the record did not change', async () => {
    const { hd, runner } = setup();
    hd.tickets.faults.softFailNextWrite = true;
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);

    expect(callsTo(hd.tickets, 'update')).toHaveLength(1);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('readback_mismatch');
    expect(c.checks.find((k) => k.name === 'status')).toMatchObject({
      pass: false,
      expected: 'resolved',
      observed: 'open',
    });
    expect(c.nextAllowedAction).toBe('repair');
    expect(hd.tickets.writes).toEqual([]);
    expect((await hd.tickets.get('T-104'))?.status).toBe('open');
    expectMessageClass(c);
  });

  it('version conflict: a stale expected version is refused and nothing changes', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(
      hd.actions.updateTicket,
      { id: 'T-104', status: 'closed', expectedVersion: 0 },
      ctx,
    );

    expect(callsTo(hd.tickets, 'update')[0]?.[2]).toMatchObject({ expectedVersion: 0 });
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('version_conflict');
    expect(c.nextAllowedAction).toBe('repair');
    expect(hd.tickets.writes).toEqual([]);
    expectMessageClass(c);
  });

  it('wrong tenant: the baseline shows another scope, so nothing is executed', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-900', status: 'resolved' }, ctx);

    expect(callsTo(hd.tickets, 'update')).toEqual([]);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('wrong_scope');
    expect(c.checks[0]).toMatchObject({ name: 'scope', pass: false, observed: { tenant: 'globex' } });
    expect((await hd.tickets.get('T-900'))?.status).toBe('open');
    expectMessageClass(c);
  });

  it('permission denial by policy: refused before any call', async () => {
    const { hd, runner } = setup({ deniedActors: ['intern'] });
    const c = await runner.run(
      hd.actions.updateTicket,
      { id: 'T-104', status: 'resolved' },
      { ...ctx, actor: 'intern' },
    );

    expect(hd.tickets.calls).toEqual([]);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('not_authorized');
    expect(c.reason).toBe('intern may not change tickets');
    expect(c.nextAllowedAction).toBe('ask_user');
    expect(hd.tickets.writes).toEqual([]);
    expectMessageClass(c);
  });

  it('permission denial by the system: a 403 is a known rejection, not an ambiguity', async () => {
    const { hd, runner } = setup();
    hd.tickets.denyActor('bot');
    const c = await runner.run(
      hd.actions.updateTicket,
      { id: 'T-104', status: 'resolved' },
      { ...ctx, actor: 'bot' },
    );

    expect(callsTo(hd.tickets, 'update')).toHaveLength(1);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('permission_denied');
    expect(hd.tickets.writes).toEqual([]);
    expectMessageClass(c);
  });
});

describe('when the verifier cannot answer', () => {
  /** Arms a reader fault the moment the write returns, so the baseline read still works. */
  function faultAfterWrite(
    hd: ReturnType<typeof setup>['hd'],
    fault: 'readerDown' | 'readerDenied' | 'readerHangs',
  ) {
    const update = hd.tickets.update.bind(hd.tickets);
    hd.tickets.update = async (...args) => {
      const result = await update(...args);
      hd.tickets.faults[fault] = true;
      return result;
    };
  }

  it('verifier outage: unknown with the operation id, then verified once it recovers', async () => {
    const { hd, runner } = setup();
    faultAfterWrite(hd, 'readerDown');
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);

    expect(callsTo(hd.tickets, 'update')).toHaveLength(1);
    expect(c.status).toBe('unknown');
    expect(c.errorCode).toBe('verifier_unavailable');
    expect(c.nextAllowedAction).toBe('poll');
    expect(hd.tickets.writes).toHaveLength(1);
    expectMessageClass(c);

    hd.tickets.faults.readerDown = false;
    const later = await runner.poll(c.operationId);
    expect(later.status).toBe('verified');
    expect(callsTo(hd.tickets, 'update')).toHaveLength(1);
  });

  it('verifier timeout: a hanging read ends unknown after verifyTimeoutMs', async () => {
    const { hd, runner } = setup();
    faultAfterWrite(hd, 'readerHangs');
    const started = hd.clock.now();
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);

    expect(callsTo(hd.tickets, 'get')).toHaveLength(2);
    expect(c.status).toBe('unknown');
    expect(c.errorCode).toBe('verifier_timeout');
    expect(hd.clock.now() - started).toBe(hd.actions.updateTicket.verifyTimeoutMs);
    expect(hd.tickets.writes).toHaveLength(1);
    expectMessageClass(c);
  });

  it('verification denied: unknown, never failed, because the write may have landed', async () => {
    const { hd, runner } = setup();
    faultAfterWrite(hd, 'readerDenied');
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);

    expect(c.status).toBe('unknown');
    expect(c.errorCode).toBe('verification_denied');
    expect(hd.tickets.writes).toHaveLength(1);
    expectMessageClass(c);
  });

  it('a baseline read that fails executes nothing and may be retried', async () => {
    const { hd, runner } = setup();
    hd.tickets.faults.readerDown = true;
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);

    expect(callsTo(hd.tickets, 'update')).toEqual([]);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('baseline_unavailable');
    expect(c.nextAllowedAction).toBe('retry');
    hd.tickets.faults.readerDown = false;
    const again = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(again.status).toBe('verified');
    expect(again.operationId).toBe(c.operationId);
    expect(hd.tickets.writes).toHaveLength(1);
  });
});

describe('stale reads', () => {
  /** T-104: resolved at t0 (v2), reopened 10 s later (v3); a 5 s replica still shows the old resolved copy. */
  async function reopenedTicket(hd: ReturnType<typeof setup>['hd']) {
    await hd.tickets.update('T-104', { status: 'resolved' }, { tenant: 'acme', operationId: 'earlier-run' });
    hd.clock.advance(10_000);
    await hd.tickets.update('T-104', { status: 'open' }, { tenant: 'acme', operationId: 'customer-reopen' });
    hd.tickets.replicaLagMs = 5_000;
  }

  it('a lagging replica that shows an old matching record is not verified', async () => {
    const { hd, runner } = setup({ ticketReadsFrom: 'replica' });
    await reopenedTicket(hd);
    hd.tickets.faults.softFailNextWrite = true;
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);

    expect(callsTo(hd.tickets, 'getFromReplica')).toHaveLength(1);
    expect(c.status).toBe('unknown');
    expect(c.errorCode).toBe('stale_read');
    expect(c.checks.find((k) => k.name === 'status')?.pass).toBe(true);
    expect(c.checks.find((k) => k.name.startsWith('fresh'))).toMatchObject({
      pass: false,
      expected: '> 3',
      observed: 2,
    });
    expect((await hd.tickets.get('T-104'))?.status).toBe('open');
    expectMessageClass(c);
  });

  it('a settle window re-reads until the replica catches up', async () => {
    const { hd, runner } = setup({
      ticketReadsFrom: 'replica',
      ticketSettle: { timeoutMs: 8_000, intervalMs: 1_000 },
    });
    await reopenedTicket(hd);
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);

    expect(c.status).toBe('verified');
    expect(callsTo(hd.tickets, 'getFromReplica').length).toBeGreaterThan(1);
    expect(c.evidence).toMatchObject({ status: 'resolved', fresh: 4 });
    expect(hd.tickets.writes.at(-1)?.operationId).toBe(c.operationId);
    expectMessageClass(c);
  });
});
