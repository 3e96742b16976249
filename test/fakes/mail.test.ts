import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, FakeMailProvider } from '../../src/testing/fakes/index.js';

const mail = (key?: string) => ({
  to: 'ana@example.com',
  subject: 'Proposal',
  body: 'Attached.',
  idempotencyKey: key,
});

describe('FakeMailProvider', () => {
  let clock: FakeClock;
  let provider: FakeMailProvider;

  beforeEach(() => {
    clock = new FakeClock();
    provider = new FakeMailProvider({ clock, deliveryDelayMs: 2000 });
  });

  it('accepts with a 202-style queued answer, then delivers after the delay', async () => {
    const sentAt = clock.now();
    const accepted = await provider.send(mail('k1'));
    expect(accepted).toEqual({ status: 'queued', messageId: 'msg-0001' });
    expect(await provider.lookup('k1')).toMatchObject({
      status: 'queued',
      updatedAt: sentAt,
      idempotencyKey: 'k1',
    });
    expect(provider.inbox('ana@example.com')).toEqual([]);
    clock.advance(1999);
    expect((await provider.lookup('k1'))!.status).toBe('queued');
    clock.advance(1);
    expect(await provider.lookup('k1')).toEqual({
      messageId: 'msg-0001',
      idempotencyKey: 'k1',
      to: 'ana@example.com',
      subject: 'Proposal',
      body: 'Attached.',
      status: 'delivered',
      enqueuedAt: sentAt,
      updatedAt: sentAt + 2000,
    });
    expect(provider.inbox('ana@example.com').map((m) => m.messageId)).toEqual(['msg-0001']);
    expect(provider.inbox('bo@example.com')).toEqual([]);
  });

  it('works with FakeClock.sleep as a poller would', async () => {
    await provider.send(mail('k1'));
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      seen.push((await provider.lookup('k1'))!.status);
      await clock.sleep(1000);
    }
    expect(seen).toEqual(['queued', 'queued', 'delivered']);
  });

  it('dedupes on the idempotency key: same messageId, no second message', async () => {
    const a = await provider.send(mail('k1'));
    const b = await provider.send({ ...mail('k1'), subject: 'Different' });
    expect(b).toEqual(a);
    expect(provider.messages).toHaveLength(1);
    await provider.send(mail());
    await provider.send(mail());
    expect(provider.messages).toHaveLength(3);
  });

  it.each([
    'dropped',
    'bounced',
  ] as const)('nextOutcome %s: ends that way after the delay, one-shot', async (outcome) => {
    provider.faults.nextOutcome = outcome;
    await provider.send(mail('bad'));
    expect(provider.faults.nextOutcome).toBeNull();
    await provider.send(mail('good'));
    clock.advance(2000);
    expect((await provider.lookup('bad'))!.status).toBe(outcome);
    expect((await provider.lookup('good'))!.status).toBe('delivered');
    expect(provider.inbox('ana@example.com').map((m) => m.idempotencyKey)).toEqual(['good']);
  });

  it('nextOutcome stuck: stays queued forever', async () => {
    provider.faults.nextOutcome = 'stuck';
    await provider.send(mail('k1'));
    clock.advance(365 * 24 * 3600 * 1000);
    expect(await provider.lookup('k1')).toMatchObject({
      status: 'queued',
      updatedAt: clock.now() - 365 * 24 * 3600 * 1000,
    });
    expect(provider.inbox('ana@example.com')).toEqual([]);
  });

  it('a deduplicated send does not consume nextOutcome', async () => {
    await provider.send(mail('k1'));
    provider.faults.nextOutcome = 'bounced';
    await provider.send(mail('k1'));
    expect(provider.faults.nextOutcome).toBe('bounced');
  });

  it('the delivery delay is fixed per message at enqueue time', async () => {
    await provider.send(mail('slow'));
    provider.deliveryDelayMs = 10;
    await provider.send(mail('fast'));
    clock.advance(10);
    expect((await provider.lookup('fast'))!.status).toBe('delivered');
    expect((await provider.lookup('slow'))!.status).toBe('queued');
  });

  it('failNextWrite: throws before accepting, nothing queued, one-shot', async () => {
    provider.faults.failNextWrite = true;
    await expect(provider.send(mail('k1'))).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    expect(provider.messages).toEqual([]);
    expect(await provider.lookup('k1')).toBeNull();
    await expect(provider.send(mail('k1'))).resolves.toMatchObject({ status: 'queued' });
  });

  it('loseNextResponse: accepts the message, then throws; a retry with the key is deduped', async () => {
    provider.faults.loseNextResponse = true;
    await expect(provider.send(mail('k1'))).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    expect(provider.messages).toHaveLength(1);
    const retry = await provider.send(mail('k1'));
    expect(retry.messageId).toBe(provider.messages[0]!.messageId);
    clock.advance(2000);
    expect(provider.inbox('ana@example.com')).toHaveLength(1);
  });

  it('lookup faults: 503 down, 403 denied, hang; inbox stays ground truth', async () => {
    await provider.send(mail('k1'));
    provider.faults.readerDown = true;
    await expect(provider.lookup('k1')).rejects.toMatchObject({ status: 503, code: 'EUNAVAILABLE' });
    await expect(provider.getMessage('msg-0001')).rejects.toMatchObject({ status: 503 });
    provider.faults.readerDown = false;
    provider.faults.readerDenied = true;
    await expect(provider.lookup('k1')).rejects.toMatchObject({ status: 403 });
    provider.faults.readerDenied = false;
    provider.faults.readerHangs = true;
    const race = await Promise.race([
      provider.lookup('k1').then(() => 'read'),
      clock.sleep(100).then(() => 'timeout'),
    ]);
    expect(race).toBe('timeout');
    clock.advance(2000);
    expect(provider.inbox('ana@example.com')).toHaveLength(1);
  });

  it('getMessage reads by provider id, and calls are recorded', async () => {
    const { messageId } = await provider.send(mail('k1'));
    expect((await provider.getMessage(messageId))!.subject).toBe('Proposal');
    expect(await provider.getMessage('msg-9999')).toBeNull();
    expect(provider.calls.map((c) => c.method)).toEqual(['send', 'getMessage', 'getMessage']);
  });
});
