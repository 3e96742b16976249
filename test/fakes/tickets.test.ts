import { beforeEach, describe, expect, it } from 'vitest';
import { FakeClock, FakeTicketSystem } from '../../src/testing/fakes/index.js';

const op = (operationId: string, extra: Record<string, unknown> = {}) => ({
  tenant: 'acme',
  operationId,
  ...extra,
});

describe('FakeTicketSystem', () => {
  let clock: FakeClock;
  let tickets: FakeTicketSystem;

  beforeEach(() => {
    clock = new FakeClock();
    tickets = new FakeTicketSystem({ clock });
    tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
  });

  it('seeds with defaults and reads back deep copies', async () => {
    const t = await tickets.get('T-104');
    expect(t).toEqual({
      id: 'T-104',
      tenant: 'acme',
      status: 'open',
      assignee: null,
      priority: 'normal',
      version: 1,
      updatedAt: clock.now(),
      lastOperationId: null,
    });
    t!.status = 'closed';
    expect((await tickets.get('T-104'))!.status).toBe('open');
    expect(await tickets.get('T-999')).toBeNull();
  });

  it('applies an update: bumps version, stamps operation, appends audit and writes', async () => {
    clock.advance(500);
    const r = await tickets.update('T-104', { status: 'resolved' }, op('op-1'));
    expect(r).toEqual({ ok: true, version: 2 });
    const t = await tickets.get('T-104');
    expect(t).toMatchObject({
      status: 'resolved',
      version: 2,
      lastOperationId: 'op-1',
      updatedAt: clock.now(),
    });
    expect(await tickets.auditLog('T-104')).toEqual([
      { operationId: 'op-1', version: 2, changes: { status: 'resolved' }, at: clock.now() },
    ]);
    expect(tickets.writes).toHaveLength(1);
    expect(tickets.writes[0]).toMatchObject({
      ticketId: 'T-104',
      operationId: 'op-1',
      version: 2,
      late: false,
    });
    expect(tickets.calls.map((c) => c.method)).toEqual(['update', 'get', 'auditLog']);
  });

  it('ignores fields a patch may not change', async () => {
    await tickets.update('T-104', { status: 'pending', version: 99, tenant: 'evil' } as never, op('op-1'));
    expect(await tickets.get('T-104')).toMatchObject({ status: 'pending', version: 2, tenant: 'acme' });
  });

  it('answers not_found and version_conflict without applying', async () => {
    expect(await tickets.update('T-999', { status: 'resolved' }, op('op-1'))).toEqual({
      ok: false,
      code: 'not_found',
    });
    expect(await tickets.update('T-104', { status: 'resolved' }, op('op-2', { expectedVersion: 7 }))).toEqual(
      {
        ok: false,
        code: 'version_conflict',
        currentVersion: 1,
      },
    );
    expect(await tickets.update('T-104', { status: 'resolved' }, op('op-3', { expectedVersion: 1 }))).toEqual(
      {
        ok: true,
        version: 2,
      },
    );
    expect(tickets.writes.map((w) => w.operationId)).toEqual(['op-3']);
  });

  it('throws 403 for a wrong tenant or a denied actor', async () => {
    await expect(
      tickets.update('T-104', { status: 'resolved' }, { tenant: 'globex', operationId: 'x' }),
    ).rejects.toMatchObject({
      status: 403,
    });
    tickets.denyActor('mallory');
    await expect(
      tickets.update('T-104', { status: 'resolved' }, op('y', { actor: 'mallory' })),
    ).rejects.toMatchObject({
      status: 403,
    });
    await expect(
      tickets.update('T-104', { status: 'resolved' }, op('z', { actor: 'alice' })),
    ).resolves.toMatchObject({
      ok: true,
    });
    expect(tickets.writes.map((w) => w.operationId)).toEqual(['z']);
  });

  it('failNextWrite: throws ETIMEDOUT, nothing applied, one-shot', async () => {
    tickets.faults.failNextWrite = true;
    await expect(tickets.update('T-104', { status: 'resolved' }, op('op-1'))).rejects.toMatchObject({
      code: 'ETIMEDOUT',
    });
    expect(tickets.writes).toEqual([]);
    expect((await tickets.get('T-104'))!.version).toBe(1);
    expect(tickets.faults.failNextWrite).toBe(false);
    expect(tickets.calls[0]!.fault).toBe('failNextWrite');
    await expect(tickets.update('T-104', { status: 'resolved' }, op('op-2'))).resolves.toMatchObject({
      ok: true,
    });
  });

  it('loseNextResponse: throws ETIMEDOUT but the write IS applied, one-shot', async () => {
    tickets.faults.loseNextResponse = true;
    const err = await tickets.update('T-104', { status: 'resolved' }, op('op-1')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).toMatchObject({ code: 'ETIMEDOUT' });
    expect(tickets.writes.map((w) => w.operationId)).toEqual(['op-1']);
    expect(await tickets.get('T-104')).toMatchObject({ status: 'resolved', version: 2 });
    expect(tickets.faults.loseNextResponse).toBe(false);
    await expect(tickets.update('T-104', { priority: 'high' }, op('op-2'))).resolves.toEqual({
      ok: true,
      version: 3,
    });
  });

  it('lost and failed requests throw indistinguishable errors', async () => {
    tickets.faults.failNextWrite = true;
    const a = await tickets.update('T-104', {}, op('a')).catch((e: Error) => e);
    tickets.faults.loseNextResponse = true;
    const b = await tickets.update('T-104', {}, op('b')).catch((e: Error) => e);
    expect((a as Error).message).toBe((b as Error).message);
  });

  it('softFailNextWrite: reports success with a version but changes nothing', async () => {
    tickets.faults.softFailNextWrite = true;
    expect(await tickets.update('T-104', { status: 'resolved' }, op('op-1'))).toEqual({
      ok: true,
      version: 2,
    });
    expect(await tickets.get('T-104')).toMatchObject({ status: 'open', version: 1 });
    expect(await tickets.auditLog('T-104')).toEqual([]);
    expect(tickets.writes).toEqual([]);
    expect(tickets.faults.softFailNextWrite).toBe(false);
    await tickets.update('T-104', { status: 'resolved' }, op('op-2'));
    expect((await tickets.get('T-104'))!.status).toBe('resolved');
  });

  it('landNextWriteAfterMs: throws now, lands later on the next read, stamped with its landing time', async () => {
    tickets.faults.landNextWriteAfterMs = 3000;
    const sentAt = clock.now();
    await expect(tickets.update('T-104', { status: 'resolved' }, op('op-1'))).rejects.toMatchObject({
      code: 'ETIMEDOUT',
    });
    expect(tickets.faults.landNextWriteAfterMs).toBeNull();
    clock.advance(2999);
    expect((await tickets.get('T-104'))!.status).toBe('open');
    expect(tickets.writes).toEqual([]);
    clock.advance(5000);
    const t = await tickets.get('T-104');
    expect(t).toMatchObject({
      status: 'resolved',
      version: 2,
      updatedAt: sentAt + 3000,
      lastOperationId: 'op-1',
    });
    expect(tickets.writes).toEqual([
      expect.objectContaining({ operationId: 'op-1', at: sentAt + 3000, late: true }),
    ]);
  });

  it('a late landing is checked against the state when it lands', async () => {
    tickets.faults.landNextWriteAfterMs = 1000;
    await expect(
      tickets.update('T-104', { status: 'resolved' }, op('late', { expectedVersion: 1 })),
    ).rejects.toThrow();
    // Someone else writes first; the late write then meets a version conflict and does nothing.
    await tickets.update('T-104', { assignee: 'bo' }, op('other'));
    clock.advance(1000);
    expect(await tickets.get('T-104')).toMatchObject({ status: 'open', assignee: 'bo', version: 2 });
    expect(tickets.writes.map((w) => w.operationId)).toEqual(['other']);
  });

  it('the writes log alone settles due late landings', () => {
    tickets.faults.landNextWriteAfterMs = 10;
    void tickets.update('T-104', { status: 'resolved' }, op('op-1')).catch(() => {});
    clock.advance(10);
    expect(tickets.writes).toHaveLength(1);
  });

  it('replica returns the ticket as it was replicaLagMs ago', async () => {
    tickets.replicaLagMs = 1000;
    expect((await tickets.getFromReplica('T-104'))!.status).toBe('open');
    await tickets.update('T-104', { status: 'resolved' }, op('op-1'));
    expect((await tickets.getFromReplica('T-104'))!.status).toBe('open');
    clock.advance(999);
    expect((await tickets.getFromReplica('T-104'))!.version).toBe(1);
    clock.advance(1);
    expect(await tickets.getFromReplica('T-104')).toMatchObject({ status: 'resolved', version: 2 });
    expect(await tickets.getFromReplica('T-999')).toBeNull();
  });

  it('replica lag can be set in the constructor', async () => {
    const lagging = new FakeTicketSystem({ clock, replicaLagMs: 200 });
    lagging.seed([{ id: 'A', tenant: 't' }]);
    await lagging.update('A', { priority: 'urgent' }, { tenant: 't', operationId: 'o' });
    expect((await lagging.getFromReplica('A'))!.priority).toBe('normal');
    clock.advance(200);
    expect((await lagging.getFromReplica('A'))!.priority).toBe('urgent');
  });

  it('readerDown and readerDenied persist until cleared and hit every read', async () => {
    tickets.faults.readerDown = true;
    await expect(tickets.get('T-104')).rejects.toMatchObject({ status: 503, code: 'EUNAVAILABLE' });
    await expect(tickets.getFromReplica('T-104')).rejects.toMatchObject({ status: 503 });
    await expect(tickets.auditLog('T-104')).rejects.toMatchObject({ status: 503 });
    tickets.faults.readerDown = false;
    tickets.faults.readerDenied = true;
    await expect(tickets.get('T-104')).rejects.toMatchObject({ status: 403 });
    tickets.faults.readerDenied = false;
    await expect(tickets.get('T-104')).resolves.not.toBeNull();
  });

  it('readerHangs: reads never settle, so a caller timeout wins', async () => {
    tickets.faults.readerHangs = true;
    const read = tickets.get('T-104').then(() => 'read');
    const timeout = clock.sleep(5000).then(() => 'timeout');
    expect(await Promise.race([read, timeout])).toBe('timeout');
    expect(tickets.calls.at(-1)!.fault).toBe('readerHangs');
  });

  it('records every call with copied args and the time it was made', async () => {
    const patch = { status: 'resolved' as const };
    await tickets.update('T-104', patch, op('op-1'));
    patch.status = 'closed' as never;
    expect(tickets.calls).toEqual([
      {
        method: 'update',
        args: ['T-104', { status: 'resolved' }, { tenant: 'acme', operationId: 'op-1' }],
        at: clock.now(),
      },
    ]);
  });
});
