import { describe, expect, it } from 'vitest';
import { accepted, createRunner, defineAction, freshness } from '../../src/index.js';
import { anyInput } from '../support/any-input.js';

interface Row {
  id: string;
  owner: string | null;
}

describe('batch units', () => {
  it('a unit whose row is missing (observed undefined, as rows.find gives) is not applied', async () => {
    // The truth: row "a" exists and gets unassigned; row "ghost" does not exist at all.
    const rows = new Map<string, Row>([['a', { id: 'a', owner: 'bob' }]]);
    const action = defineAction<{ ids: string[] }, Row[]>({
      name: 'unassign',
      description: 'Unassigns rows.',
      postcondition: 'Every row has no owner.',
      input: anyInput as never,
      target: (i) => `rows:${i.ids.join(',')}`,
      execute: async (i) => {
        for (const id of i.ids) {
          const row = rows.get(id);
          if (row) row.owner = null;
        }
        return { ok: true };
      },
      observe: async (i) => i.ids.flatMap((id) => rows.get(id) ?? []).map((r) => ({ ...r })),
      expect: (i, seen) =>
        i.ids.map((id) => ({
          target: id,
          expected: { owner: null },
          observed: seen.find((r) => r.id === id) as unknown as Record<string, unknown> | null,
        })),
    });
    const c = await createRunner().run(action, { ids: ['a', 'ghost'] }, { runId: 'r' });
    expect(rows.has('ghost')).toBe(false);
    expect(c.status).toBe('partial');
    expect(c.units).toEqual({ required: 2, passed: 1, failed: 1, failedTargets: ['ghost'] });
  });
});

describe('values the canonical form cannot tell apart', () => {
  it('two different URL objects do not verify a change that did not happen', async () => {
    const site = { homepage: new URL('https://old.example') };
    let writes = 0;
    const action = defineAction<{ url: string }, { homepage: URL }>({
      name: 'set_homepage',
      description: 'Sets the homepage.',
      postcondition: 'The homepage is the URL.',
      input: anyInput as never,
      target: () => 'site:1',
      execute: async () => {
        writes++; // accepted but lost: the homepage stays old
        return { ok: true };
      },
      observe: async () => ({ homepage: site.homepage }),
      expect: (i) => ({ homepage: new URL(i.url) }),
    });
    const c = await createRunner().run(action, { url: 'https://new.example' }, { runId: 'r' });
    expect(site.homepage.href).toBe('https://old.example/');
    expect(writes).toBe(1);
    expect(c.status).not.toBe('verified');
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'invalid_expectation' });
    expect(c.reason).toMatch(/URL/);
  });
});

describe('accepted mode baseline', () => {
  it('a failed job whose fields match is not a no_op: the work runs and is verified', async () => {
    // The truth: the last refund job failed at the provider; no money moved.
    let job = { state: 'failed', amount: 10 };
    let refunds = 0;
    const action = defineAction<{ amount: number }, typeof job>({
      name: 'refund',
      description: 'Refunds an order.',
      postcondition: 'The refund succeeded.',
      input: anyInput as never,
      mode: 'accepted',
      target: () => 'order:42',
      before: async () => ({ ...job }),
      execute: async (i) => {
        refunds++;
        job = { state: 'succeeded', amount: i.amount };
        return accepted('job-2');
      },
      observe: async () => ({ ...job }),
      expect: (i) => ({ amount: i.amount }),
      terminal: (o) => o.state as 'running' | 'succeeded' | 'failed',
      poll: { initialDelayMs: 1, maxDelayMs: 1, maxDurationMs: 1_000 },
    });
    const c = await createRunner().run(action, { amount: 10 }, { runId: 'r' });
    expect(refunds).toBe(1);
    expect(job.state).toBe('succeeded');
    expect(c.status).toBe('verified');
  });
});

describe('scope', () => {
  it('a numeric tenant id is the same tenant as the run scope "42": the landed write is verified', async () => {
    // The truth: the write lands on tenant 42's row, which is the run's tenant.
    const row = { id: 'T-1', status: 'open', tenant_id: 42 };
    let writes = 0;
    const action = defineAction<{ status: string }, typeof row>({
      name: 'set_status',
      description: 'Sets a status.',
      postcondition: 'The ticket has the status.',
      input: anyInput as never,
      target: () => 'ticket:T-1',
      safeToRepeat: true,
      execute: async (i) => {
        writes++;
        row.status = i.status;
        return { ok: true };
      },
      observe: async () => ({ ...row }),
      expect: (i) => ({ status: i.status }),
      scopeOf: (o) => ({ tenant: o.tenant_id as unknown as string }),
    });
    const c = await createRunner().run(
      action,
      { status: 'resolved' },
      { runId: 'r', scope: { tenant: '42' } },
    );
    expect(row.status).toBe('resolved');
    expect(writes).toBe(1);
    expect(c.status).toBe('verified');
    expect(c.nextAllowedAction).toBe('none');
  });

  it('another numeric tenant is still another scope', async () => {
    const row = { id: 'T-1', status: 'open', tenant_id: 43 };
    const action = defineAction<{ status: string }, typeof row>({
      name: 'set_status',
      description: 'Sets a status.',
      postcondition: 'The ticket has the status.',
      input: anyInput as never,
      target: () => 'ticket:T-1',
      execute: async (i) => {
        row.status = i.status;
        return { ok: true };
      },
      observe: async () => ({ ...row }),
      expect: (i) => ({ status: i.status }),
      scopeOf: (o) => ({ tenant: o.tenant_id as unknown as string }),
    });
    const c = await createRunner().run(
      action,
      { status: 'resolved' },
      { runId: 'r', scope: { tenant: '42' } },
    );
    expect(c).toMatchObject({ status: 'failed', errorCode: 'wrong_scope' });
  });
});

describe('accepted mode: a failed state must be this operation’s', () => {
  interface Job {
    id: string;
    key: string;
    state: 'queued' | 'succeeded' | 'failed';
  }

  /** Export jobs per report; reads come from a replica that lags `lagReads` reads behind the primary. */
  function exportSystem(lagReads: number) {
    const primary: Job[] = [{ id: 'job-1', key: 'yesterday', state: 'failed' }];
    let replica = primary.map((j) => ({ ...j }));
    let reads = 0;
    return {
      primary,
      runs: 0,
      start(key: string) {
        this.runs++;
        primary.push({ id: `job-${primary.length + 1}`, key, state: 'succeeded' });
      },
      latest(): Job {
        reads++;
        if (reads > lagReads) replica = primary.map((j) => ({ ...j }));
        return { ...replica[replica.length - 1]! };
      },
    };
  }

  function exportAction(sys: ReturnType<typeof exportSystem>) {
    return defineAction<{ report: string }, Job>({
      name: 'export_report',
      description: 'Exports a report.',
      postcondition: 'The export job for this run succeeded.',
      input: anyInput as never,
      mode: 'accepted',
      target: (i) => `report:${i.report}`,
      execute: async (_i, ctx) => {
        sys.start(ctx.idempotencyKey);
        return accepted('queued');
      },
      observe: async () => sys.latest(),
      expect: () => ({ state: 'succeeded' }),
      terminal: (j) => (j.state === 'queued' ? 'running' : j.state),
      fresh: (j, ctx) => j.key === ctx.idempotencyKey,
      poll: { initialDelayMs: 1, maxDelayMs: 1, maxDurationMs: 5_000, maxReads: 5 },
    });
  }

  it('a lagging read of yesterday’s failed job does not fail a job that succeeded', async () => {
    const sys = exportSystem(1);
    const c = await createRunner().run(exportAction(sys), { report: 'q3' }, { runId: 'r' });
    expect(sys.runs).toBe(1);
    expect(sys.primary.at(-1)?.state).toBe('succeeded');
    expect(c.status).toBe('verified');
  });

  it('a replica that never catches up ends unknown within the budget, not failed', async () => {
    const sys = exportSystem(1_000);
    const c = await createRunner().run(exportAction(sys), { report: 'q3' }, { runId: 'r' });
    expect(sys.primary.at(-1)?.state).toBe('succeeded');
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'poll_budget_exhausted' });
  });

  it('this operation’s own failed job still fails it', async () => {
    const sys = exportSystem(0);
    sys.start = function (key: string) {
      this.runs++;
      sys.primary.push({ id: 'job-2', key, state: 'failed' });
    };
    const c = await createRunner().run(exportAction(sys), { report: 'q3' }, { runId: 'r' });
    expect(c).toMatchObject({ status: 'failed', errorCode: 'provider_failed' });
  });
});

describe('accepted mode: finished work that is not this operation’s', () => {
  interface Export {
    key: string;
    range: string;
    state: 'queued' | 'succeeded' | 'failed';
  }

  it('a lagging read of yesterday’s export (another range) does not fail today’s, which succeeded', async () => {
    const primary: Export[] = [{ key: 'yesterday', range: 'Q2', state: 'succeeded' }];
    let replica = primary.map((e) => ({ ...e }));
    let reads = 0;
    let runs = 0;
    const action = defineAction<{ range: string }, Export>({
      name: 'export_range',
      description: 'Exports a range.',
      postcondition: 'The export of the range succeeded.',
      input: anyInput as never,
      mode: 'accepted',
      target: () => 'exports:acme',
      execute: async (i, ctx) => {
        runs++;
        primary.push({ key: ctx.idempotencyKey, range: i.range, state: 'succeeded' });
        return accepted('queued');
      },
      observe: async () => {
        if (++reads > 1) replica = primary.map((e) => ({ ...e }));
        return { ...replica[replica.length - 1]! };
      },
      expect: (i) => ({ range: i.range }),
      terminal: (e) => (e.state === 'queued' ? 'running' : e.state),
      fresh: freshness.idempotencyKeyIn((e) => e.key),
      poll: { initialDelayMs: 1, maxDelayMs: 1, maxDurationMs: 5_000, maxReads: 5 },
    });
    const c = await createRunner().run(action, { range: 'Q3' }, { runId: 'r' });
    expect(runs).toBe(1);
    expect(primary.at(-1)).toMatchObject({ range: 'Q3', state: 'succeeded' });
    expect(c.status).toBe('verified');
  });
});

describe('an observation that is a list, not a record', () => {
  it('observe returning a query’s empty rows does not verify `{ owner: null }` on a missing row', async () => {
    const rows = new Map<string, Row>(); // the truth: the row does not exist
    const action = defineAction<{ id: string }, Row[]>({
      name: 'unassign_one',
      description: 'Unassigns a row.',
      postcondition: 'The row has no owner.',
      input: anyInput as never,
      target: (i) => `row:${i.id}`,
      execute: async (i) => {
        const row = rows.get(i.id);
        if (row) row.owner = null;
        return { rowCount: 0 };
      },
      // SELECT ... WHERE id = $1 → result.rows: [] when there is no such row.
      observe: async (i) => (rows.has(i.id) ? [{ ...rows.get(i.id)! }] : []),
      expect: () => ({ owner: null }) as never,
    });
    const c = await createRunner().run(action, { id: 'ghost' }, { runId: 'r' });
    expect(rows.size).toBe(0);
    expect(c.status).not.toBe('verified');
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'invalid_expectation' });
  });

  it('a unit observed as an empty list (rows.filter) is absent', async () => {
    const rows: Row[] = [{ id: 'a', owner: 'bob' }];
    const action = defineAction<{ ids: string[] }, Row[]>({
      name: 'unassign_many',
      description: 'Unassigns rows.',
      postcondition: 'Every row has no owner.',
      input: anyInput as never,
      target: () => 'rows',
      execute: async () => {
        for (const r of rows) r.owner = null;
        return { ok: true };
      },
      observe: async () => rows.map((r) => ({ ...r })),
      expect: (i, seen) =>
        i.ids.map((id) => ({
          target: id,
          expected: { owner: null },
          observed: seen.filter((r) => r.id === id) as unknown as Record<string, unknown>,
        })),
    });
    const c = await createRunner().run(action, { ids: ['ghost'] }, { runId: 'r' });
    expect(c).toMatchObject({ status: 'failed', errorCode: 'readback_mismatch' });
  });
});

describe('an observation that is a Map', () => {
  it('does not verify `{ owner: null }`: a Map has no fields to read', async () => {
    const store = new Map<string, unknown>([['owner', 'bob']]); // the truth: still owned by bob
    const action = defineAction<{ id: string }, Map<string, unknown>>({
      name: 'unassign_kv',
      description: 'Unassigns a row.',
      postcondition: 'The row has no owner.',
      input: anyInput as never,
      target: (i) => `row:${i.id}`,
      execute: async () => ({ ok: true }), // lost
      observe: async () => new Map(store),
      expect: () => ({ owner: null }) as never,
    });
    const c = await createRunner().run(action, { id: 'r1' }, { runId: 'r' });
    expect(store.get('owner')).toBe('bob');
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'invalid_expectation' });
  });
});
