import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, FakeLedger } from '../../src/testing/fakes/index.js';

describe('FakeLedger', () => {
  let clock: FakeClock;
  let ledger: FakeLedger;
  const refund = { orderId: 'order-42', amountCents: 1500, idempotencyKey: 'refund-42' };

  beforeEach(() => {
    clock = new FakeClock();
    ledger = new FakeLedger({ clock });
  });

  it('commits a refund and a charge, readable by key', async () => {
    expect(await ledger.refund(refund)).toEqual({ ok: true, entryId: 'le-0001', replayed: false });
    expect(await ledger.charge({ account: 'acct-1', amountCents: 900, idempotencyKey: 'c1' })).toMatchObject({
      ok: true,
    });
    expect(await ledger.findByKey('refund-42')).toEqual({
      entryId: 'le-0001',
      kind: 'refund',
      ...refund,
      at: clock.now(),
    });
    expect(await ledger.findByKey('c1')).toMatchObject({
      kind: 'charge',
      account: 'acct-1',
      amountCents: 900,
    });
    expect(await ledger.findByKey('nope')).toBeNull();
    expect(ledger.entries()).toHaveLength(2);
    expect(ledger.balance('acct-1')).toBe(900);
    expect(ledger.refunded('order-42')).toBe(1500);
  });

  it('same key + same params replays the original entry without a new one', async () => {
    const first = await ledger.refund(refund);
    const second = await ledger.refund({ ...refund });
    expect(second).toEqual({ ok: true, entryId: (first as { entryId: string }).entryId, replayed: true });
    expect(ledger.entries()).toHaveLength(1);
    expect(ledger.refunded('order-42')).toBe(1500);
  });

  it('same key + different params is an idempotency_mismatch, nothing applied', async () => {
    await ledger.refund(refund);
    expect(await ledger.refund({ ...refund, amountCents: 2000 })).toMatchObject({
      ok: false,
      code: 'idempotency_mismatch',
    });
    expect(
      await ledger.charge({ account: 'acct-1', amountCents: 1500, idempotencyKey: 'refund-42' }),
    ).toMatchObject({ ok: false, code: 'idempotency_mismatch' });
    expect(ledger.entries()).toHaveLength(1);
  });

  it('rejects invalid amounts', async () => {
    expect(await ledger.charge({ account: 'a', amountCents: -5, idempotencyKey: 'k' })).toMatchObject({
      ok: false,
      code: 'invalid_amount',
    });
    expect(ledger.entries()).toEqual([]);
  });

  it('rejectNext: one business rejection, nothing applied, then the same key can succeed', async () => {
    ledger.rejectNext('insufficient_funds', 'merchant balance too low');
    expect(await ledger.refund(refund)).toEqual({
      ok: false,
      code: 'insufficient_funds',
      reason: 'merchant balance too low',
    });
    expect(ledger.entries()).toEqual([]);
    expect(ledger.faults.rejectNext).toBeNull();
    expect(await ledger.refund(refund)).toMatchObject({ ok: true, replayed: false });
  });

  it('failNextWrite: throws, nothing committed', async () => {
    ledger.faults.failNextWrite = true;
    await expect(ledger.refund(refund)).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    expect(ledger.entries()).toEqual([]);
    expect(await ledger.findByKey('refund-42')).toBeNull();
  });

  it('loseNextResponse: committed then throws; a retry with the key replays, no double refund', async () => {
    ledger.faults.loseNextResponse = true;
    await expect(ledger.refund(refund)).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    expect(ledger.entries()).toHaveLength(1);
    expect(await ledger.refund(refund)).toMatchObject({ ok: true, replayed: true });
    expect(ledger.refunded('order-42')).toBe(1500);
  });

  it('landNextWriteAfterMs: invisible until it lands, then committed with its landing time', async () => {
    ledger.faults.landNextWriteAfterMs = 5000;
    const sentAt = clock.now();
    await expect(ledger.refund(refund)).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    clock.advance(4999);
    expect(await ledger.findByKey('refund-42')).toBeNull();
    clock.advance(1);
    expect(await ledger.findByKey('refund-42')).toMatchObject({ at: sentAt + 5000 });
    expect(ledger.entries()).toHaveLength(1);
  });

  it('a late landing after a keyed retry is a replay, not a second refund', async () => {
    ledger.faults.landNextWriteAfterMs = 5000;
    await expect(ledger.refund(refund)).rejects.toThrow();
    expect(await ledger.refund(refund)).toMatchObject({ ok: true, replayed: false });
    clock.advance(6000);
    expect(ledger.entries()).toHaveLength(1);
    expect(ledger.refunded('order-42')).toBe(1500);
  });

  it('reader faults hit findByKey only; entries and balance stay ground truth', async () => {
    await ledger.charge({ account: 'acct-1', amountCents: 100, idempotencyKey: 'c1' });
    ledger.faults.readerDown = true;
    await expect(ledger.findByKey('c1')).rejects.toMatchObject({ status: 503, code: 'EUNAVAILABLE' });
    ledger.faults.readerDown = false;
    ledger.faults.readerDenied = true;
    await expect(ledger.findByKey('c1')).rejects.toMatchObject({ status: 403 });
    expect(ledger.balance('acct-1')).toBe(100);
    expect(ledger.calls.map((c) => [c.method, c.fault])).toEqual([
      ['charge', undefined],
      ['findByKey', 'readerDown'],
      ['findByKey', 'readerDenied'],
    ]);
  });
});
