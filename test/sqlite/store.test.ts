import { afterEach, describe, expect, it } from 'vitest';
import { ReadbackError } from '../../src/errors.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { ev, type Handle, newOp, openHandle, T0 } from '../fixtures/sqlite/support.js';

const handles: Handle[] = [];
afterEach(() => {
  for (const db of handles.splice(0)) if (db.open) db.close();
});

async function open() {
  const db = await openHandle();
  handles.push(db);
  const store = await sqliteStore({ database: db });
  return { db, store };
}

describe('sqliteStore specifics (as the memory store behaves)', () => {
  it('rejects rather than throws synchronously, with ReadbackError instances', async () => {
    const { store } = await open();
    let promise: Promise<unknown> | undefined;
    expect(() => {
      promise = store.claimDue(0, 1_000, 'w', 0);
    }).not.toThrow();
    await expect(promise).rejects.toBeInstanceOf(ReadbackError);
    await expect(promise).rejects.toMatchObject({ code: 'invalid_options', field: 'limit' });
  });

  it('rejects an unknown lifecycle in a patch and logs nothing', async () => {
    const { store } = await open();
    await store.reserve(newOp(1), ev('reserved'));
    const patch = { lifecycle: 'done' } as unknown as { lifecycle: 'settled' };
    await expect(store.transition('op-1', ['requested'], patch, ev('x'))).rejects.toMatchObject({
      code: 'invalid_options',
      field: 'patch.lifecycle',
    });
    expect(await store.events('op-1')).toHaveLength(1);
  });

  it('treats undefined patch values as absent and ignores keys that are not record fields', async () => {
    const { store } = await open();
    await store.reserve(newOp(1), ev('reserved'));
    const patch = { lifecycle: 'executing', status: undefined, executedAt: undefined, bogus: 1 } as const;
    const next = await store.transition('op-1', ['requested'], patch, ev('x', T0 + 2_000));
    expect(next).toMatchObject({
      lifecycle: 'executing',
      status: null,
      executedAt: null,
      updatedAt: T0 + 2_000,
    });
    expect(next).not.toHaveProperty('bogus');
  });

  it('takes updatedAt from the patch when given, else from the event', async () => {
    const { store } = await open();
    await store.reserve(newOp(1), ev('reserved'));
    const a = await store.transition('op-1', ['requested'], { reads: 1, updatedAt: T0 + 7 }, ev('x', T0 + 9));
    expect(a?.updatedAt).toBe(T0 + 7);
    const b = await store.transition('op-1', ['requested'], { reads: 2 }, ev('x', T0 + 9));
    expect(b?.updatedAt).toBe(T0 + 9);
  });

  it('refuses null for a field that always has a value, naming it', async () => {
    const { store } = await open();
    await store.reserve(newOp(1), ev('reserved'));
    const patch = { attempt: null } as unknown as { attempt: number };
    await expect(store.transition('op-1', ['requested'], patch, ev('x'))).rejects.toMatchObject({
      code: 'invalid_options',
      field: 'patch.attempt',
    });
  });

  it('refuses events without a time, a type or an attempt', async () => {
    const { store } = await open();
    const cases = [
      [{ ...ev('reserved'), at: Number.NaN }, 'event.at'],
      [{ ...ev('reserved'), type: '' }, 'event.type'],
      [{ ...ev('reserved'), attempt: undefined as unknown as number }, 'event.attempt'],
    ] as const;
    for (const [event, field] of cases) {
      await expect(store.reserve(newOp(1), event)).rejects.toMatchObject({ code: 'invalid_options', field });
    }
    expect(await store.get('op-1')).toBeNull();
  });

  it('never writes the lease token into the event log', async () => {
    const { db, store } = await open();
    await store.reserve(newOp(1), ev('reserved'));
    await store.transition('op-1', ['requested'], { lifecycle: 'running', nextPollAt: T0 }, ev('x'));
    const [claim] = await store.claimDue(1, 500, 'worker-1', T0);
    const log = JSON.stringify(await store.events('op-1'));
    expect(log).not.toContain(claim!.leaseToken);
    expect(log).toContain('worker-1');
    const raw = JSON.stringify(db.prepare('SELECT * FROM readback_events').all());
    expect(raw).not.toContain(claim!.leaseToken);
  });

  it('keeps JSON data exactly: unicode, nesting, a __proto__ key, numbers, and null against absent detail', async () => {
    const { store } = await open();
    const input = JSON.parse(
      '{"text":"Ünïcødé ✓ 日本 \\ud83d\\ude80","nested":{"a":[1,2.5,-3e-7,{"b":null}]},"__proto__":{"x":1},"big":9007199254740991,"flag":false}',
    ) as Record<string, unknown>;
    const { record } = await store.reserve(newOp(1, { input, scope: { tenant: 'ß', region: '' } }), ev('r'));
    expect(record.input).toEqual(input);
    expect(Object.keys(record.input as object)).toContain('__proto__');
    expect(Object.getPrototypeOf(record.input)).toBe(Object.prototype);
    expect(record.scope).toEqual({ tenant: 'ß', region: '' });
    await store.transition(
      'op-1',
      ['requested'],
      { reads: 1 },
      ev('with-null', T0, { detail: null as never }),
    );
    const events = await store.events('op-1');
    expect(events[0]).not.toHaveProperty('detail');
    expect(events[1]).toHaveProperty('detail', null);
  });

  it('keeps times that are not whole milliseconds', async () => {
    const { store } = await open();
    await store.reserve(newOp(1, { requestedAt: T0 + 0.25 }), ev('r', T0 + 0.5));
    const next = await store.transition('op-1', ['requested'], { nextPollAt: T0 + 1.75 }, ev('x', T0 + 1.5));
    expect(next).toMatchObject({ requestedAt: T0 + 0.25, nextPollAt: T0 + 1.75, updatedAt: T0 + 1.5 });
    expect((await store.events('op-1')).map((e) => e.at)).toEqual([T0 + 0.5, T0 + 1.5]);
  });

  it('lists by an empty lifecycle set as nothing, like the memory store', async () => {
    const { store } = await open();
    await store.reserve(newOp(1), ev('reserved'));
    expect(await store.list({ lifecycle: [] })).toEqual([]);
  });

  it('puts schemaVersion on every record row and event row', async () => {
    const { db, store } = await open();
    await store.reserve(newOp(1), ev('reserved'));
    await store.transition('op-1', ['requested'], { lifecycle: 'executing' }, ev('x'));
    expect(db.prepare('SELECT DISTINCT schema_version AS v FROM readback_operations').all()).toEqual([
      { v: 1 },
    ]);
    expect(db.prepare('SELECT DISTINCT schema_version AS v FROM readback_events').all()).toEqual([{ v: 1 }]);
  });

  it('rolls a failed write back whole: no record without its event', async () => {
    const { db, store } = await open();
    // A trigger that fails the event insert stands in for a disk error halfway through reserve.
    db.exec(`CREATE TRIGGER fail_event BEFORE INSERT ON readback_events
      BEGIN SELECT RAISE(ABORT, 'disk on fire'); END`);
    await expect(store.reserve(newOp(1), ev('reserved'))).rejects.toThrow('disk on fire');
    expect(await store.get('op-1')).toBeNull();
    expect(db.inTransaction).toBe(false);
    db.exec('DROP TRIGGER fail_event');
    expect((await store.reserve(newOp(1), ev('reserved'))).created).toBe(true);
  });

  it('closes an owned file handle but never a borrowed one', async () => {
    const { db, store } = await open();
    await store.close();
    await store.close();
    expect(db.open).toBe(true);
    await expect(store.get('op-1')).rejects.toMatchObject({ code: 'store_closed' });
  });
});
