import { describe, expect, it } from 'vitest';
import { accepted, createRunner, defineAction } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { anyInput } from '../support/any-input.js';
import { callsTo, ctx, expectMessageClass, setup } from './support.js';

describe('batch results', () => {
  it('a batch where every unit failed is failed and says which units, as a partial one does', async () => {
    const { hd, runner } = setup();
    const ids = hd.batch.seed(3);
    for (const id of ids) hd.batch.faults.failIds.add(id);
    const c = await runner.run(hd.actions.migrateRecords, { ids, toVersion: 2 }, ctx);

    expect(hd.batch.migrations).toEqual([]);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('readback_mismatch');
    expect(c.units).toEqual({
      required: 3,
      passed: 0,
      failed: 3,
      failedTargets: ['record:rec-001', 'record:rec-002', 'record:rec-003'],
    });
    expect(c.reason).toBe('3 of 3 units did not apply');
    const stored = await runner.store.get(c.operationId);
    expect(stored?.completion?.units).toEqual(c.units);
    expectMessageClass(c);
  });

  it('an accepted batch job that finished with no unit applied is failed with its units', async () => {
    const clock = new FakeClock();
    const rows = new Map([
      ['a', { id: 'a', v: 1 }],
      ['b', { id: 'b', v: 1 }],
    ]);
    const action = defineAction<{ ids: string[] }, { state: string; rows: { id: string; v: number }[] }>({
      name: 'bulk_bump',
      description: 'Bumps rows in a background job.',
      postcondition: 'Every row is at v2.',
      mode: 'accepted',
      input: anyInput as never,
      target: (i) => `rows:${i.ids.join(',')}`,
      execute: async () => accepted('job-1'),
      observe: async (i) => ({ state: 'done', rows: i.ids.map((id) => ({ ...rows.get(id)! })) }),
      terminal: () => 'succeeded',
      expect: (i, seen) =>
        i.ids.map((id) => ({
          target: id,
          expected: { v: 2 },
          observed: seen.rows.find((r) => r.id === id) ?? null,
        })),
    });
    const c = await createRunner({ clock, random: () => 0 }).run(action, { ids: ['a', 'b'] }, { runId: 'r' });
    expect(c.status).toBe('failed');
    expect(c.units).toEqual({ required: 2, passed: 0, failed: 2, failedTargets: ['a', 'b'] });
  });

  it('an empty batch is refused as an empty expectation, not read as another target', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(hd.actions.migrateRecords, { ids: [], toVersion: 2 }, ctx);

    expect(c.status).toBe('unknown');
    expect(c.errorCode).toBe('invalid_expectation');
    expect(c.reason).toMatch(/empty list/);
    expect(c.reason).not.toMatch(/record:undefined/);
    expect(c.status).not.toBe('verified');
  });

  it('a record listed twice is one unit: counted once, and verified when it migrated', async () => {
    const { hd, runner } = setup();
    const [a, b] = hd.batch.seed(2) as [string, string];
    const c = await runner.run(hd.actions.migrateRecords, { ids: [a, a, b], toVersion: 2 }, ctx);

    expect(hd.batch.migrations.map((m) => m.id)).toEqual([a, b]);
    expect(c.status).toBe('verified');
    expect(c.units).toEqual({ required: 2, passed: 2, failed: 0, failedTargets: [] });
  });

  it('two units of one target that disagree fail that target once, never count it as passed too', async () => {
    const action = defineAction<{ id: string }, { id: string; v: number }>({
      name: 'bump',
      description: 'Bumps a row.',
      postcondition: 'The row is at v2 and v3.',
      input: anyInput as never,
      target: (i) => `row:${i.id}`,
      execute: async () => ({ ok: true }),
      observe: async (i) => ({ id: i.id, v: 2 }),
      expect: (_i, seen) => [
        { target: 'row:a', expected: { v: 2 }, observed: seen },
        { target: 'row:a', expected: { v: 3 }, observed: seen },
        { target: 'row:b', expected: { v: 2 }, observed: seen },
      ],
    });
    const c = await createRunner().run(action, { id: 'a' }, { runId: 'r' });
    expect(c.status).toBe('partial');
    expect(c.units).toEqual({ required: 2, passed: 1, failed: 1, failedTargets: ['row:a'] });
    expect(c.message).toMatch(/1 of 2 units/);
    // One check per unit target, the failing one for row:a.
    expect(c.checks.map((k) => [k.name, k.pass])).toEqual([
      ['unit:row:a', false],
      ['unit:row:b', true],
    ]);
  });

  it('a batch with a unit still pending is not verified', async () => {
    const { hd, runner } = setup();
    const ids = hd.batch.seed(4);
    hd.batch.faults.failIds.add(ids[2]!);
    const c = await runner.run(hd.actions.migrateRecords, { ids, toVersion: 2 }, ctx);
    expect(c.status).toBe('partial');
    expect(c.units?.failedTargets).toEqual([`record:${ids[2]}`]);
    expect(callsTo(hd.batch, 'migrate')).toHaveLength(1);
  });
});
