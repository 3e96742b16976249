import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Completion, StandardSchemaV1, TerminalState } from '../../src/index.js';
import { accepted, createRunner, defineAction, freshness, rejected } from '../../src/index.js';
import { FakeClock } from '../../src/testing/fakes/fake-clock.js';

/**
 * The safety property: whatever the tool returns and whatever the verifier shows, `verified` only
 * comes out when some observation, returned after execute started, matched every expected field,
 * was in the caller's scope, and was fresh (its version above the baseline read's).
 */

type ExecKind = 'ok' | 'throws' | 'rejected' | 'accepted' | 'hangs';
type ObsKind =
  | 'absent'
  | 'match'
  | 'mismatch'
  | 'stale'
  | 'wrong_tenant'
  | 'unversioned'
  | 'throws'
  | 'hangs';

interface ObsStep {
  kind: ObsKind;
  state: TerminalState;
  delta: number;
}

interface Observed {
  status: string;
  tenant: string;
  version?: number;
  state: TerminalState;
}

interface Scenario {
  mode: 'committed' | 'accepted';
  baseline: 'none' | 'open' | 'done';
  execs: ExecKind[];
  observations: ObsStep[];
  wait: boolean;
  safeToRepeat: boolean;
  retryBudget: number;
  maxInFlightMs: number;
  settleMs: number;
  maxReads: number;
  polls: { advanceMs: number; wait: boolean }[];
}

const BASE_VERSION = 5;
const TENANT = 'acme';

const anything: StandardSchemaV1<unknown, { id: string }> = {
  '~standard': { version: 1, vendor: 'test', validate: (value) => ({ value: value as { id: string } }) },
};

const execKind = fc.constantFrom<ExecKind>('ok', 'throws', 'rejected', 'accepted', 'hangs');
const obsStep = fc.record({
  kind: fc.constantFrom<ObsKind>(
    'absent',
    'match',
    'mismatch',
    'stale',
    'wrong_tenant',
    'unversioned',
    'throws',
    'hangs',
  ),
  state: fc.constantFrom<TerminalState>('running', 'succeeded', 'failed'),
  delta: fc.integer({ min: 0, max: 3 }),
});

const scenario: fc.Arbitrary<Scenario> = fc.record({
  mode: fc.constantFrom('committed', 'accepted'),
  baseline: fc.constantFrom('none', 'open', 'done'),
  execs: fc.array(execKind, { minLength: 1, maxLength: 3 }),
  observations: fc.array(obsStep, { maxLength: 12 }),
  wait: fc.boolean(),
  safeToRepeat: fc.boolean(),
  retryBudget: fc.integer({ min: 0, max: 2 }),
  maxInFlightMs: fc.constantFrom(0, 1_500, 5_000),
  settleMs: fc.constantFrom(0, 1_000),
  maxReads: fc.integer({ min: 1, max: 5 }),
  polls: fc.array(fc.record({ advanceMs: fc.constantFrom(0, 500, 3_000, 10_000), wait: fc.boolean() }), {
    maxLength: 4,
  }),
});

/** What the scripted verifier returned, in order, with the virtual time and a global sequence number. */
interface Logged {
  seq: number;
  at: number;
  value: Observed;
}

function buildObservation(step: ObsStep): Observed | null {
  const fresh = BASE_VERSION + 1 + step.delta;
  switch (step.kind) {
    case 'absent':
      return null;
    case 'match':
      return { status: 'done', tenant: TENANT, version: fresh, state: step.state };
    case 'mismatch':
      return { status: 'open', tenant: TENANT, version: fresh, state: step.state };
    case 'stale':
      return { status: 'done', tenant: TENANT, version: BASE_VERSION - step.delta, state: step.state };
    case 'wrong_tenant':
      return { status: 'done', tenant: 'globex', version: fresh, state: step.state };
    case 'unversioned':
      return { status: 'done', tenant: TENANT, state: step.state };
    default:
      throw new Error(`not a value step: ${step.kind}`);
  }
}

/** A scripted action plus everything it saw, so the oracle can judge the completions independently. */
function scripted(s: Scenario, clock: FakeClock) {
  let seq = 0;
  let execIndex = 0;
  let obsIndex = 0;
  const executeStarts: { seq: number; at: number }[] = [];
  const log: Logged[] = [];
  const baseline: Observed | null =
    s.baseline === 'none'
      ? null
      : { status: s.baseline, tenant: TENANT, version: BASE_VERSION, state: 'succeeded' };

  const action = defineAction<{ id: string }, Observed>({
    name: `scripted_${s.mode}`,
    description: 'A tool whose results and read-backs are drawn by fast-check.',
    input: anything,
    target: (i) => `thing:${i.id}`,
    mode: s.mode,
    postcondition: 'The thing is done, in the caller’s tenant, written after the baseline.',
    before: async () => (baseline ? { ...baseline } : null),
    execute: async (i) => {
      const kind = s.execs[Math.min(execIndex++, s.execs.length - 1)]!;
      executeStarts.push({ seq: ++seq, at: clock.now() });
      switch (kind) {
        case 'ok':
          return { ok: true };
        case 'throws':
          throw new Error('ECONNRESET');
        case 'rejected':
          return rejected('conflict', 'the provider refused');
        case 'accepted':
          return accepted(`job-${i.id}`, { status: 202 });
        case 'hangs':
          return new Promise(() => {});
      }
    },
    observe: async () => {
      const step = s.observations[obsIndex++] ?? { kind: 'absent', state: 'running', delta: 0 };
      if (step.kind === 'throws') throw new Error('verifier down');
      if (step.kind === 'hangs') return new Promise<never>(() => {});
      const value = buildObservation(step);
      if (value) log.push({ seq: ++seq, at: clock.now(), value: { ...value } });
      return value;
    },
    expect: () => ({ status: 'done' }),
    fresh: freshness.versionAbove((o) => o.version),
    scopeOf: (o) => ({ tenant: o.tenant }),
    ...(s.mode === 'accepted' ? { terminal: (o: Observed) => o.state } : {}),
    safeToRepeat: s.safeToRepeat,
    maxInFlightMs: s.maxInFlightMs,
    executeTimeoutMs: 2_000,
    verifyTimeoutMs: 1_000,
    settle: { timeoutMs: s.settleMs, intervalMs: 250 },
    poll: { maxDurationMs: 5_000, maxReads: s.maxReads, initialDelayMs: 200, maxDelayMs: 1_000 },
  });

  /** The oracle, written without the library: a qualifying observation exists. */
  function hasQualifyingObservation(): boolean {
    const first = executeStarts[0];
    if (!first) return false;
    return log.some(
      ({ seq: at, value }) =>
        at > first.seq &&
        value.status === 'done' &&
        value.tenant === TENANT &&
        typeof value.version === 'number' &&
        (baseline === null || value.version > BASE_VERSION) &&
        (s.mode !== 'accepted' || value.state === 'succeeded'),
    );
  }

  return { action, log, executeStarts, hasQualifyingObservation };
}

const SETTLED = new Set(['verified', 'failed', 'partial', 'no_op']);

function checkInvariants(c: Completion, oracle: () => boolean, executed: boolean): void {
  expect(c.nextAllowedAction === 'none').toBe(c.status === 'verified' || c.status === 'no_op');
  if (c.status === 'verified') {
    expect(executed).toBe(true);
    expect(oracle()).toBe(true);
    expect(c.checks.length).toBeGreaterThan(0);
    expect(c.checks.every((check) => check.pass)).toBe(true);
    expect(c.checks.map((check) => check.name)).toEqual(
      expect.arrayContaining(['scope', 'status', 'fresh:version_above_baseline']),
    );
  }
  if (c.status === 'no_op') expect(executed).toBe(false);
}

describe('verified is only ever earned', () => {
  it('no drawn sequence of tool results and observations yields an unearned verified', async () => {
    const seen: Record<string, number> = {};
    await fc.assert(
      fc.asyncProperty(scenario, async (s) => {
        const clock = new FakeClock();
        const runner = createRunner({ clock, random: () => 0.5, retryBudget: s.retryBudget });
        const { action, executeStarts, hasQualifyingObservation } = scripted(s, clock);

        const first = await runner.run(
          action,
          { id: '1' },
          { runId: 'run-prop', scope: { tenant: TENANT }, wait: s.wait },
        );
        checkInvariants(first, hasQualifyingObservation, executeStarts.length > 0);
        seen[first.status] = (seen[first.status] ?? 0) + 1;
        if (s.baseline === 'done') expect(first.status).toBe('no_op');

        let last = first;
        for (const step of s.polls) {
          clock.advance(step.advanceMs);
          const next = await runner.poll(first.operationId, { wait: step.wait });
          checkInvariants(next, hasQualifyingObservation, executeStarts.length > 0);
          seen[`poll:${next.status}`] = (seen[`poll:${next.status}`] ?? 0) + 1;
          // A settled outcome is final: later polls report it unchanged.
          if (SETTLED.has(last.status)) expect(next).toEqual(last);
          last = next;
        }
      }),
      { numRuns: 400 },
    );
    // Not vacuous: the runs reach verified (first time and after polls) and the honest failures.
    expect(seen.verified).toBeGreaterThan(0);
    expect(seen['poll:verified']).toBeGreaterThan(0);
    for (const status of ['pending', 'failed', 'unknown', 'no_op']) expect(seen[status]).toBeGreaterThan(0);
  }, 120_000);

  it('optimistic actions are never verified, whatever execute does', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(execKind, { minLength: 1, maxLength: 2 }),
        fc.array(fc.constantFrom(0, 1_000, 60_000), { maxLength: 3 }),
        async (execs, advances) => {
          const clock = new FakeClock();
          const runner = createRunner({ clock, random: () => 0.5 });
          let index = 0;
          const action = defineAction<{ id: string }, never>({
            name: 'scripted_optimistic',
            description: 'Page someone; nobody can read back whether they saw it.',
            input: anything,
            target: () => 'pager:oncall',
            mode: 'optimistic',
            postcondition: 'The page was sent.',
            executeTimeoutMs: 2_000,
            execute: async () => {
              switch (execs[Math.min(index++, execs.length - 1)]!) {
                case 'ok':
                  return { ok: true, delivered: true };
                case 'throws':
                  throw new Error('ECONNRESET');
                case 'rejected':
                  return rejected('bad_number', 'no such pager');
                case 'accepted':
                  return accepted('page-1');
                case 'hangs':
                  return new Promise(() => {});
              }
            },
          });
          const c = await runner.run(action, { id: '1' }, { runId: 'run-opt' });
          expect(c.status).not.toBe('verified');
          expect(['unknown', 'failed']).toContain(c.status);
          expect(c.nextAllowedAction).not.toBe('none');
          for (const ms of advances) {
            clock.advance(ms);
            const later = await runner.poll(c.operationId, { wait: true });
            expect(later.status).not.toBe('verified');
            expect(later.nextAllowedAction).not.toBe('none');
          }
        },
      ),
      { numRuns: 300 },
    );
  }, 60_000);

  it('the oracle is not vacuous: verified does occur, and only with a qualifying read', async () => {
    const clock = new FakeClock();
    const runner = createRunner({ clock, random: () => 0.5 });
    const s: Scenario = {
      mode: 'accepted',
      baseline: 'open',
      execs: ['accepted'],
      observations: [
        { kind: 'stale', state: 'succeeded', delta: 0 },
        { kind: 'wrong_tenant', state: 'running', delta: 0 },
        { kind: 'match', state: 'running', delta: 0 },
        { kind: 'match', state: 'succeeded', delta: 1 },
      ],
      wait: true,
      safeToRepeat: false,
      retryBudget: 1,
      maxInFlightMs: 1_500,
      settleMs: 0,
      maxReads: 5,
      polls: [],
    };
    const { action, log, hasQualifyingObservation } = scripted(s, clock);
    const c = await runner.run(action, { id: '1' }, { runId: 'run-prop', scope: { tenant: TENANT } });
    expect(c.status).toBe('verified');
    expect(hasQualifyingObservation()).toBe(true);
    expect(log.map((l) => l.value.version)).toEqual([5, 6, 6, 7]);
  });
});
