// A background batch job the provider reports failed may have applied part of the batch before it stopped. The
// records read back say which: 98 of 100 migrated is `partial`, not a plain `failed` that invites doing it all
// again as if nothing happened.
import { describe, expect, it } from 'vitest';
import { accepted, createRunner, defineAction } from '../../src/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { anyInput } from '../support/any-input.js';

type Seen = { state: 'running' | 'failed' | 'done'; rows: { id: string; v: number }[] };

/** A job over `ids` that the provider reports failed after applying `applied` of them. */
function failingJob(rows: Map<string, { id: string; v: number }>, applied: string[]) {
  return defineAction<{ ids: string[] }, Seen>({
    name: 'bulk_bump',
    description: 'Bumps rows to v2 in a background job.',
    postcondition: 'Every row is at v2.',
    mode: 'accepted',
    input: anyInput as never,
    target: (i) => `rows:${i.ids.join(',')}`,
    execute: async () => {
      for (const id of applied) rows.set(id, { id, v: 2 });
      return accepted('job-1');
    },
    observe: async (i) => ({ state: 'failed', rows: i.ids.map((id) => ({ ...rows.get(id)! })) }),
    terminal: (seen) =>
      seen.state === 'failed' ? 'failed' : seen.state === 'done' ? 'succeeded' : 'running',
    expect: (i, seen) =>
      i.ids.map((id) => ({
        target: id,
        expected: { v: 2 },
        observed: seen.rows.find((r) => r.id === id) ?? null,
      })),
  });
}

const fresh = (ids: string[]) => new Map(ids.map((id) => [id, { id, v: 1 }]));

describe('a batch job the provider reports failed', () => {
  it('is partial when some units applied, naming the ones that did not', async () => {
    const rows = fresh(['a', 'b', 'c']);
    const c = await createRunner({ clock: new FakeClock(), random: () => 0 }).run(
      failingJob(rows, ['a', 'b']),
      { ids: ['a', 'b', 'c'] },
      { runId: 'r' },
    );
    expect(c.status).toBe('partial');
    expect(c.errorCode).toBe('provider_failed');
    expect(c.units).toEqual({ required: 3, passed: 2, failed: 1, failedTargets: ['c'] });
    expect(c.reason).toBe('the provider reports the work failed; 2 of 3 units applied');
    expect(rows.get('c')?.v).toBe(1);
    expect(c.message).not.toMatch(/\b(done|completed)\b/i);
  });

  it('is failed, with its units, when none applied', async () => {
    const c = await createRunner({ clock: new FakeClock(), random: () => 0 }).run(
      failingJob(fresh(['a', 'b']), []),
      { ids: ['a', 'b'] },
      { runId: 'r' },
    );
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('provider_failed');
    expect(c.units).toEqual({ required: 2, passed: 0, failed: 2, failedTargets: ['a', 'b'] });
  });

  it('stays failed (never verified) when every unit reads back applied', async () => {
    const c = await createRunner({ clock: new FakeClock(), random: () => 0 }).run(
      failingJob(fresh(['a', 'b']), ['a', 'b']),
      { ids: ['a', 'b'] },
      { runId: 'r' },
    );
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('provider_failed');
    expect(c.units?.passed).toBe(2);
  });
});
