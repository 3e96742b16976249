import { beforeEach, describe, expect, it } from 'vitest';
import { FakeBatchTarget, FakeClock } from '../../src/testing/fakes/index.js';

describe('FakeBatchTarget', () => {
  let clock: FakeClock;
  let target: FakeBatchTarget;

  beforeEach(() => {
    clock = new FakeClock();
    target = new FakeBatchTarget({ clock });
  });

  it('seeds rec-001… at schema version 1', async () => {
    expect(target.seed(3)).toEqual(['rec-001', 'rec-002', 'rec-003']);
    expect(await target.readMany(['rec-001', 'rec-404'])).toEqual([
      { id: 'rec-001', value: 'value-001', schemaVersion: 1, migratedAt: null },
      null,
    ]);
  });

  it('migrates every record when nothing is poisoned', async () => {
    const ids = target.seed(3);
    expect(await target.migrate(ids, { toVersion: 2 })).toEqual({ ok: true, accepted: 3 });
    const records = await target.readMany(ids);
    expect(records.every((r) => r?.schemaVersion === 2 && r.migratedAt === clock.now())).toBe(true);
    expect(target.migrations).toHaveLength(3);
  });

  it('lies about failIds: accepted counts them, but they are not migrated', async () => {
    const ids = target.seed(5);
    target.faults.failIds.add('rec-002').add('rec-004');
    expect(await target.migrate([...ids, 'rec-999'], { toVersion: 2 })).toEqual({ ok: true, accepted: 6 });
    const versions = (await target.readMany(ids)).map((r) => r?.schemaVersion);
    expect(versions).toEqual([2, 1, 2, 1, 2]);
    expect(target.migrations.map((m) => m.id)).toEqual(['rec-001', 'rec-003', 'rec-005']);
    // failIds persist: a repeat run still skips them until the test clears the set.
    await target.migrate(ids, { toVersion: 2 });
    expect(target.migrations).toHaveLength(3);
    target.faults.failIds.clear();
    await target.migrate(ids, { toVersion: 2 });
    expect(target.migrations.map((m) => m.id)).toEqual([
      'rec-001',
      'rec-003',
      'rec-005',
      'rec-002',
      'rec-004',
    ]);
  });

  it('failNextWrite migrates nothing; loseNextResponse migrates then throws', async () => {
    const ids = target.seed(2);
    target.faults.failNextWrite = true;
    await expect(target.migrate(ids, { toVersion: 2 })).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    expect(target.migrations).toEqual([]);
    target.faults.loseNextResponse = true;
    await expect(target.migrate(ids, { toVersion: 2 })).rejects.toMatchObject({ code: 'ETIMEDOUT' });
    expect(target.migrations).toHaveLength(2);
  });

  it('readerDown makes readMany throw 503', async () => {
    const ids = target.seed(1);
    target.faults.readerDown = true;
    await expect(target.readMany(ids)).rejects.toMatchObject({ status: 503, code: 'EUNAVAILABLE' });
    expect(target.calls.at(-1)).toMatchObject({ method: 'readMany', fault: 'readerDown', at: clock.now() });
  });
});
