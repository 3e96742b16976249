import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ActionContract,
  accepted,
  createRunner,
  defineAction,
  memoryStore,
  type OperationStore,
  type TerminalState,
} from '../../src/index.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { anyInput } from '../support/any-input.js';

interface Row {
  id: string;
  status: string;
}

/**
 * The truth: two rows. Row B already holds what the call asks of row A, so a verifier misrouted to B (the other
 * id, a list's first row) sees exactly the expected fields. `misroute` sends every read of A to B.
 */
function system(options: { misroute?: boolean; loseWrites?: string[] } = {}) {
  const rows = new Map<string, Row>([
    ['A', { id: 'A', status: 'open' }],
    ['B', { id: 'B', status: 'resolved' }],
  ]);
  const writes: string[] = [];
  let reads = 0;
  const read = (id: string): Row | null => {
    reads++;
    const routed = options.misroute && id === 'A' ? 'B' : id;
    const row = rows.get(routed);
    return row ? { ...row } : null;
  };
  const write = (id: string, status: string) => {
    writes.push(id);
    const row = rows.get(id);
    if (row && !options.loseWrites?.includes(id)) row.status = status;
  };
  return { rows, writes, read, write, reads: () => reads };
}
type System = ReturnType<typeof system>;

type Input = { id: string; status: string };

function resolveRow(sys: System, extra: Record<string, unknown> = {}) {
  const contract: ActionContract<Input, Row> = {
    name: 'resolve_row',
    description: 'Sets the status of a row.',
    postcondition: 'The row has the requested status.',
    input: anyInput as never,
    target: (i) => `row:${i.id}`,
    execute: async (i) => {
      sys.write(i.id, i.status);
      return { ok: true };
    },
    observe: async (i) => sys.read(i.id),
    expect: (i) => ({ status: i.status }),
    targetOf: (r) => `row:${r.id}`,
    safeToRepeat: false,
  };
  return defineAction({ ...contract, ...extra } as ActionContract<Input, Row>);
}

const call = { id: 'A', status: 'resolved' };

describe('committed: a read of another record', () => {
  it('is unknown / wrong_target, settled, never verified; the effect on the real row stands', async () => {
    const sys = system({ misroute: true });
    const store = memoryStore();
    const action = resolveRow(sys, { settle: { timeoutMs: 1_000, intervalMs: 100 } });
    const c = await createRunner({ store }).run(action, call, { runId: 'r' });
    expect(sys.rows.get('A')?.status).toBe('resolved');
    expect(sys.writes).toEqual(['A']);
    expect(c).toMatchObject({
      status: 'unknown',
      errorCode: 'wrong_target',
      nextAllowedAction: 'ask_user',
      safeToRepeat: false,
    });
    expect(c.checks).toEqual([{ name: 'target', pass: false, expected: 'row:A', observed: 'row:B' }]);
    expect(c.reason).toContain('"row:B"');
    expect(c.message).toContain(c.operationId);
    // A misdirected verifier stays misdirected: the settle window does not spend itself re-reading it.
    expect(sys.reads()).toBe(1);
    const record = await store.get(c.operationId);
    expect(record).toMatchObject({ lifecycle: 'settled', status: 'unknown', nextPollAt: null });
    expect(record?.completion?.errorCode).toBe('wrong_target');
  });

  it('a read of the requested record verifies, with a passing target check among the checks', async () => {
    const sys = system();
    const c = await createRunner().run(resolveRow(sys), call, { runId: 'r' });
    expect(c.status).toBe('verified');
    expect(c.checks[0]).toEqual({ name: 'target', pass: true, expected: 'row:A', observed: 'row:A' });
    expect(c.checks.map((k) => k.name)).toEqual(['target', 'status']);
  });

  it.each([
    [
      'throws',
      () => (): string => {
        throw new Error('no id column');
      },
      'targetOf() threw: no id column',
    ],
    ['is async', () => async (r: Row) => `row:${r.id}`, 'targetOf() returned a promise'],
    [
      'rejects',
      () => async (): Promise<string> => {
        throw new Error('lookup failed');
      },
      'targetOf() returned a promise',
    ],
    ['returns a number', () => () => 7, 'targetOf() returned number'],
  ])('a targetOf that %s is invalid_expectation (ask_user), not a read error to poll', async (_n, make, text) => {
    const sys = system();
    const store = memoryStore();
    const c = await createRunner({ store }).run(resolveRow(sys, { targetOf: make() }), call, { runId: 'r' });
    expect(sys.writes).toEqual(['A']);
    expect(c).toMatchObject({
      status: 'unknown',
      errorCode: 'invalid_expectation',
      nextAllowedAction: 'ask_user',
    });
    expect(c.reason).toContain(text);
  });
});

describe('baseline: a before() read of another record', () => {
  it('ends with nothing executed: failed / wrong_target, ask_user, never no_op', async () => {
    const sys = system({ misroute: true });
    const store = memoryStore();
    const action = resolveRow(sys, { before: async (i: Input) => sys.read(i.id) });
    const c = await createRunner({ store }).run(action, call, { runId: 'r' });
    expect(sys.writes).toEqual([]);
    expect(sys.rows.get('A')?.status).toBe('open');
    expect(c).toMatchObject({
      status: 'failed',
      errorCode: 'wrong_target',
      nextAllowedAction: 'ask_user',
      safeToRepeat: true,
      attempt: 0,
    });
    expect(c.reason).toContain('nothing was executed');
    expect((await store.get(c.operationId))?.status).toBe('failed');
  });

  it('a throwing targetOf on the baseline runs nothing either', async () => {
    const sys = system();
    const action = resolveRow(sys, {
      before: async (i: Input) => sys.read(i.id),
      targetOf: () => {
        throw new Error('boom');
      },
    });
    const c = await createRunner().run(action, call, { runId: 'r' });
    expect(sys.writes).toEqual([]);
    expect(c).toMatchObject({ status: 'failed', errorCode: 'invalid_expectation' });
  });
});

interface Job {
  id: string;
  state: 'running' | 'succeeded' | 'failed';
  status: string;
}

/** Jobs by row id; the provider's status read for A is misrouted to B's job. */
function jobs(bState: Job['state']) {
  const all = new Map<string, Job>([['B', { id: 'B', state: bState, status: 'resolved' }]]);
  const started: string[] = [];
  let reads = 0;
  const action = defineAction<Input, Job>({
    name: 'resolve_row_async',
    description: 'Queues a status change of a row.',
    postcondition: 'The job for the row succeeded with the requested status.',
    input: anyInput as never,
    target: (i) => `row:${i.id}`,
    mode: 'accepted',
    execute: async (i) => {
      started.push(i.id);
      all.set(i.id, { id: i.id, state: 'running', status: 'open' });
      return accepted(`job-${i.id}`);
    },
    observe: async () => {
      reads++;
      return { ...all.get('B')! };
    },
    terminal: (j): TerminalState => j.state,
    expect: (i) => ({ status: i.status }),
    targetOf: (j) => `row:${j.id}`,
    safeToRepeat: false,
    poll: { maxDurationMs: 60_000, maxReads: 6, initialDelayMs: 10, maxDelayMs: 10, jitter: 0 },
  });
  return { all, started, action, reads: () => reads };
}

describe('accepted polling: another target’s job', () => {
  it.each([
    ['running', 'never spends the poll budget on it'],
    ['failed', 'is not this operation’s provider failure'],
    ['succeeded', 'with matching fields is not verified'],
  ] as const)('%s: %s; one read ends it unknown / wrong_target', async (state, _why) => {
    const j = jobs(state);
    const clock = new FakeClock();
    const store = memoryStore();
    const c = await createRunner({ store, clock }).run(j.action, call, { runId: 'r' });
    expect(j.started).toEqual(['A']);
    expect(j.all.get('A')?.state).toBe('running');
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'wrong_target', nextAllowedAction: 'ask_user' });
    expect(j.reads()).toBe(1);
    expect(await store.get(c.operationId)).toMatchObject({
      lifecycle: 'settled',
      status: 'unknown',
      reads: 1,
    });
  });
});

describe('batch units', () => {
  it('a unit whose record is another target’s fails with a target check, though its fields match', async () => {
    // The truth: the write to B is lost; the lookup for B returns A's row, which was resolved.
    const sys = system({ loseWrites: ['B'] });
    sys.rows.get('B')!.status = 'open';
    const action = defineAction<{ ids: string[] }, Row[]>({
      name: 'resolve_rows',
      description: 'Resolves rows.',
      postcondition: 'Every row is resolved.',
      input: anyInput as never,
      target: (i) => `rows:${i.ids.join(',')}`,
      execute: async (i) => {
        for (const id of i.ids) sys.write(id, 'resolved');
        return { ok: true };
      },
      observe: async (i) => i.ids.map(() => sys.read('A')!),
      expect: (i, seen) =>
        i.ids.map((id, n) => ({
          target: `row:${id}`,
          expected: { status: 'resolved' },
          observed: seen[n] as unknown as Record<string, unknown>,
        })),
      // For a batch, targetOf reads each unit's record, not the observation.
      targetOf: (r: unknown) => `row:${(r as Row).id}`,
    });
    const c = await createRunner().run(action, { ids: ['A', 'B'] }, { runId: 'r' });
    expect(sys.rows.get('B')?.status).toBe('open');
    expect(c.status).toBe('partial');
    expect(c.units).toEqual({ required: 2, passed: 1, failed: 1, failedTargets: ['row:B'] });
    expect(c.checks).toContainEqual({
      name: 'unit:row:B:target',
      pass: false,
      expected: 'row:B',
      observed: 'row:A',
    });
  });
});

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const backends: Record<string, () => Promise<{ a: OperationStore; b: OperationStore }>> = {
  memory: async () => {
    const s = memoryStore();
    return { a: s, b: s };
  },
  sqlite: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rb-target-audit-'));
    dirs.push(dir);
    const path = join(dir, 'ops.db');
    return { a: await sqliteStore({ path }), b: await sqliteStore({ path }) };
  },
};

for (const [name, open] of Object.entries(backends)) {
  describe(`after a restart (${name})`, () => {
    it('runner.poll and reconcile settle a misdirected read as unknown / wrong_target', async () => {
      const { a, b } = await open();
      const clock = new FakeClock();
      const j = jobs('running');
      const first = createRunner({ store: a, clock, random: () => 0.5 });
      const polled = await first.run(j.action, call, { runId: 'r1', wait: false });
      const reconciled = await first.run(
        j.action,
        { id: 'A', status: 'closed' },
        { runId: 'r2', wait: false },
      );
      expect([polled.status, reconciled.status]).toEqual(['pending', 'pending']);
      expect(j.reads()).toBe(0);

      // A new process: a runner on a second handle of the same store.
      const second = createRunner({ store: b, clock, random: () => 0.5, actions: [j.action] });
      // Waits for the due time the record was parked with, then reads.
      const c = await second.poll(polled.operationId, { wait: true });
      expect(c).toMatchObject({
        status: 'unknown',
        errorCode: 'wrong_target',
        nextAllowedAction: 'ask_user',
      });
      expect(await b.get(polled.operationId)).toMatchObject({ lifecycle: 'settled', status: 'unknown' });

      clock.advance(60_000);
      const report = await second.reconcile({ once: true });
      expect(report.byStatus.unknown).toBe(1);
      const record = await b.get(reconciled.operationId);
      expect(record).toMatchObject({ lifecycle: 'settled', status: 'unknown', nextPollAt: null });
      expect(record?.completion?.errorCode).toBe('wrong_target');
      // Settled: a later pass has nothing to re-read.
      const reads = j.reads();
      clock.advance(3_600_000);
      expect((await second.reconcile({ once: true })).claimed).toBe(0);
      expect(j.reads()).toBe(reads);
      await a.close();
      if (b !== a) await b.close();
    });
  });
}
