import { describe, expect, it } from 'vitest';
import { callsTo, ctx, expectMessageClass, setup } from './support.js';

const email = { to: 'ana@example.com', subject: 'Your proposal', body: 'Attached.' };

describe('accepted mode against the mail provider', () => {
  it('accepted then delivered: polls with backoff until the provider shows it delivered', async () => {
    const { hd, runner } = setup();
    hd.mail.deliveryDelayMs = 3_000;
    const c = await runner.run(hd.actions.sendEmail, email, ctx);

    expect(callsTo(hd.mail, 'send')).toEqual([[{ ...email, idempotencyKey: c.idempotencyKey }]]);
    expect(c.status).toBe('verified');
    expect(callsTo(hd.mail, 'lookup').length).toBeGreaterThan(1);
    // Jitter fixed at 0.5 of 0.5: delays of 375, 750, 1500, 3000 ms (step deadlines are sleeps too: skip them).
    const { executeTimeoutMs, verifyTimeoutMs } = hd.actions.sendEmail;
    const pollSleeps = hd.clock.sleeps.filter((ms) => ms !== executeTimeoutMs && ms !== verifyTimeoutMs);
    expect(pollSleeps.slice(0, 4)).toEqual([375, 750, 1_500, 3_000]);
    expect(hd.mail.inbox('ana@example.com')).toHaveLength(1);
    expectMessageClass(c);
  });

  it('accepted then dropped: failed, because the provider says so', async () => {
    const { hd, runner } = setup();
    hd.mail.faults.nextOutcome = 'dropped';
    const c = await runner.run(hd.actions.sendEmail, email, ctx);

    expect(callsTo(hd.mail, 'send')).toHaveLength(1);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('provider_failed');
    expect(hd.mail.inbox('ana@example.com')).toEqual([]);
    expectMessageClass(c);
  });

  it('accepted with the budget exhausted: unknown, never failed', async () => {
    const { hd, runner } = setup();
    hd.mail.faults.nextOutcome = 'stuck';
    const started = hd.clock.now();
    const c = await runner.run(hd.actions.sendEmail, email, ctx);

    const { poll } = hd.actions.sendEmail;
    const lookups = callsTo(hd.mail, 'lookup').length;
    expect(lookups).toBeLessThanOrEqual(poll.maxReads);
    expect(hd.clock.now() - started).toBeLessThanOrEqual(poll.maxDurationMs);
    expect(c.status).toBe('unknown');
    expect(c.errorCode).toBe('poll_budget_exhausted');
    expect(c.nextAllowedAction).toBe('poll');
    expect((await runner.store.get(c.operationId))?.lifecycle).toBe('timed_out');
    expect(hd.mail.messages[0]?.status).toBe('queued');
    expectMessageClass(c);
  });

  it('returns pending at once when asked, and poll() advances it later', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(hd.actions.sendEmail, email, { ...ctx, wait: false });

    expect(c.status).toBe('pending');
    expect(c.nextAllowedAction).toBe('poll');
    expect(callsTo(hd.mail, 'lookup')).toEqual([]);
    expectMessageClass(c);

    const early = await runner.poll(c.operationId);
    expect(early.status).toBe('pending');
    hd.clock.advance(hd.mail.deliveryDelayMs);
    const done = await runner.poll(c.operationId);
    expect(done.status).toBe('verified');
    expect(callsTo(hd.mail, 'send')).toHaveLength(1);
    expect(hd.mail.inbox('ana@example.com')).toHaveLength(1);
  });

  it('a verifier outage while polling is retried within the budget', async () => {
    const { hd, runner } = setup();
    hd.mail.faults.readerDown = true;
    const c = await runner.run(hd.actions.sendEmail, email, { ...ctx, wait: false });
    // Polled once due: an earlier poll would be answered from the record without a read.
    hd.clock.advance(Date.parse(c.pollAfter ?? '') - hd.clock.now());
    const during = await runner.poll(c.operationId);
    expect(during.status).toBe('pending');
    expect(during.reason).toMatch(/unavailable/);
    hd.mail.faults.readerDown = false;
    hd.clock.advance(5_000);
    expect((await runner.poll(c.operationId)).status).toBe('verified');
  });

  it('a lost send response is read back through the idempotency key, not re-sent', async () => {
    const { hd, runner } = setup();
    hd.mail.faults.loseNextResponse = true;
    const c = await runner.run(hd.actions.sendEmail, email, ctx);
    expect(c.status).toBe('verified');
    expect(callsTo(hd.mail, 'send')).toHaveLength(1);
    expect(hd.mail.inbox('ana@example.com')).toHaveLength(1);
  });
});

describe('partial batches', () => {
  it('98 of 100 migrated: partial, with the failed ids', async () => {
    const { hd, runner } = setup();
    const ids = hd.batch.seed(100);
    hd.batch.faults.failIds.add('rec-017');
    hd.batch.faults.failIds.add('rec-063');
    const c = await runner.run(hd.actions.migrateRecords, { ids, toVersion: 2 }, ctx);

    expect(callsTo(hd.batch, 'migrate')).toEqual([[ids, { toVersion: 2 }]]);
    expect(c.status).toBe('partial');
    expect(c.units).toEqual({
      required: 100,
      passed: 98,
      failed: 2,
      failedTargets: ['record:rec-017', 'record:rec-063'],
    });
    expect(c.nextAllowedAction).toBe('repair');
    expect(hd.batch.migrations).toHaveLength(98);
    expect(c.message).toMatch(/98/);
    expect(c.message).toMatch(/rec-017/);
    expectMessageClass(c);
  });

  it('a whole batch migrated is verified', async () => {
    const { hd, runner } = setup();
    const ids = hd.batch.seed(10);
    const c = await runner.run(hd.actions.migrateRecords, { ids, toVersion: 2 }, ctx);
    expect(c.status).toBe('verified');
    expect(c.units).toMatchObject({ required: 10, passed: 10, failed: 0 });
    expect(hd.batch.migrations).toHaveLength(10);
  });
});

describe('optimistic mode', () => {
  it('never says verified: the page went out but nobody can read it back', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(hd.actions.pageOncall, { message: 'db down' }, ctx);
    expect(hd.pager.pages).toHaveLength(1);
    expect(c.status).toBe('unknown');
    expect(c.errorCode).toBe('unverifiable');
    expect((await runner.store.get(c.operationId))?.lifecycle).toBe('settled');
    expectMessageClass(c);
  });
});

describe('accepted mode: what the store records for each poll read', () => {
  it('a read that does not settle is an observed write; the read that settles is folded into the settle', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(hd.actions.sendEmail, email, { ...ctx, wait: false });
    hd.clock.advance(Date.parse(c.pollAfter ?? '') - hd.clock.now());
    expect((await runner.poll(c.operationId)).status).toBe('pending');
    hd.clock.advance(hd.mail.deliveryDelayMs);
    const done = await runner.poll(c.operationId);
    expect(done.status).toBe('verified');
    expect(hd.mail.inbox('ana@example.com')).toHaveLength(1);

    const events = await runner.store.events(c.operationId);
    // The still-queued read is an `observed` write (then the pending status); the delivered read is not
    // written on its own: the one settling write records it.
    expect(events.filter((e) => e.type === 'observed')).toHaveLength(1);
    expect(events.slice(-2).map((e) => e.type)).toEqual(['status', 'settled']);
    const settled = events.at(-1)!;
    expect(settled.detail?.reading).toMatchObject({ read: 'observed' });
    const record = await runner.store.get(c.operationId);
    expect(record).toMatchObject({ lifecycle: 'settled', status: 'verified', reads: 2 });
    expect(record?.lastObservedAt).toBe(hd.clock.now());
  });

  it('a read that fails the operation is folded too, and counted', async () => {
    const { hd, runner } = setup();
    hd.mail.faults.nextOutcome = 'dropped';
    const c = await runner.run(hd.actions.sendEmail, email, { ...ctx, wait: false });
    hd.clock.advance(hd.mail.deliveryDelayMs);
    expect((await runner.poll(c.operationId)).errorCode).toBe('provider_failed');
    const events = await runner.store.events(c.operationId);
    expect(events.map((e) => e.type).filter((t) => t === 'observed')).toEqual([]);
    expect(events.at(-1)).toMatchObject({ type: 'settled', status: 'failed' });
    expect((await runner.store.get(c.operationId))?.reads).toBe(1);
  });
});
