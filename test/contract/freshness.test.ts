import { describe, expect, it } from 'vitest';
import { evaluate } from '../../src/contract/evaluate.js';
import type { Check, FreshnessRule, StandardSchemaV1, StepContext } from '../../src/index.js';
import { defineAction, freshness } from '../../src/index.js';

const START = Date.parse('2026-01-01T12:00:00.000Z');

/** A hand-built step context; `before` is only present when given (even as null). */
function step(overrides: Partial<StepContext> = {}): StepContext {
  return {
    runId: 'run-1',
    scope: { tenant: 'acme' },
    signal: new AbortController().signal,
    operationId: 'op_1',
    idempotencyKey: 'key-1',
    attempt: 1,
    startedAt: new Date(START),
    ...overrides,
  };
}

/** Runs a rule and normalizes the result into a Check. */
function judge<I, O>(rule: FreshnessRule<I, O>, observed: O, ctx: StepContext, input?: I): Check {
  const result = rule(observed, ctx, input as I);
  return typeof result === 'boolean' ? { name: 'fresh', pass: result } : result;
}

interface Rec {
  version?: number | null;
  updatedAt?: unknown;
  hash?: string | null;
  key?: string | null;
  events?: unknown[] | null;
  status?: string;
}

describe('freshness.versionAbove', () => {
  const rule = freshness.versionAbove<Rec>((r) => r.version);

  it('passes only for a version strictly above the baseline read', () => {
    const ctx = step({ before: { version: 5 } });
    expect(judge(rule, { version: 6 }, ctx)).toEqual({
      name: 'fresh:version_above_baseline',
      pass: true,
      expected: '> 5',
      observed: 6,
    });
    expect(judge(rule, { version: 5 }, ctx).pass).toBe(false);
    expect(judge(rule, { version: 4 }, ctx).pass).toBe(false);
    expect(judge(rule, { version: 500 }, ctx).pass).toBe(true);
  });

  it('fails when the observed version is missing or not a number', () => {
    const ctx = step({ before: { version: 5 } });
    expect(judge(rule, {}, ctx).pass).toBe(false);
    expect(judge(rule, { version: null }, ctx).pass).toBe(false);
    expect(judge(rule, { version: '6' as unknown as number }, ctx).pass).toBe(false);
  });

  it('fails without a baseline read, and says a before() is needed', () => {
    const check = judge(rule, { version: 99 }, step());
    expect(check.pass).toBe(false);
    expect(check.expected).toMatch(/before\(\)/);
    expect(check.observed).toBe(99);
  });

  it('with a null baseline (the target did not exist) any numeric version is newer', () => {
    const ctx = step({ before: null });
    expect(judge(rule, { version: 0 }, ctx)).toMatchObject({ pass: true, expected: 'any version' });
    expect(judge(rule, { version: 1 }, ctx).pass).toBe(true);
    expect(judge(rule, { version: -3 }, ctx).pass).toBe(true);
    expect(judge(rule, {}, ctx).pass).toBe(false);
  });

  it('a baseline record without a version counts as no baseline version', () => {
    const ctx = step({ before: { status: 'open' } });
    expect(judge(rule, { version: 1 }, ctx)).toMatchObject({ pass: true, expected: 'any version' });
  });
});

describe('freshness.auditEvent', () => {
  const rule = freshness.auditEvent<Rec>((r) => r.events);

  it('passes when an event carries this operation id (operationId, operation_id or the bare id)', () => {
    const ctx = step();
    expect(judge(rule, { events: [{ operationId: 'op_0' }, { operationId: 'op_1' }] }, ctx)).toEqual({
      name: 'fresh:audit_event',
      pass: true,
      expected: 'an audit event for op_1',
      observed: '2 event(s)',
    });
    expect(judge(rule, { events: [{ operation_id: 'op_1' }] }, ctx).pass).toBe(true);
    expect(judge(rule, { events: ['op_1'] }, ctx).pass).toBe(true);
  });

  it('fails when no event carries it', () => {
    const ctx = step();
    expect(judge(rule, { events: [{ operationId: 'op_2' }, 'op_10', null, 7] }, ctx).pass).toBe(false);
    expect(judge(rule, { events: [{ id: 'op_1' }] }, ctx).pass).toBe(false);
    expect(judge(rule, { events: [] }, ctx)).toMatchObject({ pass: false, observed: '0 event(s)' });
  });

  it('treats missing events as none', () => {
    expect(judge(rule, {}, step()).pass).toBe(false);
    expect(judge(rule, { events: null }, step()).pass).toBe(false);
  });

  it('takes a custom matcher that sees the step context', () => {
    const byKey = freshness.auditEvent<Rec>(
      (r) => r.events,
      (event, ctx) => (event as { ref?: string }).ref === ctx.idempotencyKey,
    );
    expect(judge(byKey, { events: [{ ref: 'key-1' }] }, step()).pass).toBe(true);
    expect(judge(byKey, { events: [{ ref: 'key-2' }, { operationId: 'op_1' }] }, step()).pass).toBe(false);
  });
});

describe('freshness.updatedAfterStart', () => {
  const exact = freshness.updatedAfterStart<Rec>((r) => r.updatedAt);
  const tolerant = freshness.updatedAfterStart<Rec>((r) => r.updatedAt, 2_000);

  it('passes at or after the attempt start, for Dates, epoch numbers and ISO strings', () => {
    const ctx = step();
    expect(judge(exact, { updatedAt: new Date(START) }, ctx).pass).toBe(true);
    expect(judge(exact, { updatedAt: START + 1 }, ctx).pass).toBe(true);
    expect(judge(exact, { updatedAt: '2026-01-01T12:00:05.000Z' }, ctx)).toEqual({
      name: 'fresh:updated_after_start',
      pass: true,
      expected: '≥ 2026-01-01T12:00:00.000Z',
      observed: '2026-01-01T12:00:05.000Z',
    });
  });

  it('fails before the attempt start', () => {
    const ctx = step();
    expect(judge(exact, { updatedAt: START - 1 }, ctx).pass).toBe(false);
    expect(judge(exact, { updatedAt: new Date(START - 60_000) }, ctx).pass).toBe(false);
  });

  it('allows the tolerance of clock skew, and no more', () => {
    const ctx = step();
    expect(judge(tolerant, { updatedAt: START - 2_000 }, ctx)).toMatchObject({
      pass: true,
      expected: '≥ 2026-01-01T11:59:58.000Z',
    });
    expect(judge(tolerant, { updatedAt: START - 1_999 }, ctx).pass).toBe(true);
    expect(judge(tolerant, { updatedAt: START - 2_001 }, ctx).pass).toBe(false);
  });

  it('fails for a missing or unparseable time', () => {
    const ctx = step();
    for (const updatedAt of [undefined, null, 'yesterday', Number.NaN, {}, new Date('nope')]) {
      const check = judge(tolerant, { updatedAt }, ctx);
      expect(check.pass).toBe(false);
      expect(check.observed).toBeNull();
    }
  });

  it('measures from the start of this attempt, not the run', () => {
    const later = step({ startedAt: new Date(START + 10_000), attempt: 2 });
    expect(judge(exact, { updatedAt: START + 5_000 }, later).pass).toBe(false);
    expect(judge(exact, { updatedAt: START + 10_000 }, later).pass).toBe(true);
  });
});

describe('freshness.contentHash', () => {
  const rule = freshness.contentHash<{ body: string }, Rec>(
    (r) => r.hash,
    (input) => `sha:${input.body.length}`,
  );

  it('passes when the observed hash is the hash of what this input wrote', () => {
    expect(judge(rule, { hash: 'sha:5' }, step(), { body: 'hello' })).toEqual({
      name: 'fresh:content_hash',
      pass: true,
      expected: 'sha:5',
      observed: 'sha:5',
    });
  });

  it('fails for another hash or none', () => {
    expect(judge(rule, { hash: 'sha:4' }, step(), { body: 'hello' }).pass).toBe(false);
    expect(judge(rule, {}, step(), { body: 'hello' })).toMatchObject({ pass: false, observed: null });
    expect(judge(rule, { hash: null }, step(), { body: 'hello' }).pass).toBe(false);
  });
});

describe('freshness.idempotencyKeyIn', () => {
  const rule = freshness.idempotencyKeyIn<Rec>((r) => r.key);

  it('passes only when the record carries this operation’s idempotency key', () => {
    expect(judge(rule, { key: 'key-1' }, step())).toEqual({
      name: 'fresh:idempotency_key',
      pass: true,
      expected: 'key-1',
      observed: 'key-1',
    });
    expect(judge(rule, { key: 'key-2' }, step()).pass).toBe(false);
    expect(judge(rule, { key: 'key-1' }, step({ idempotencyKey: 'key-9' })).pass).toBe(false);
    expect(judge(rule, {}, step())).toMatchObject({ pass: false, observed: null });
  });
});

describe('freshness.all', () => {
  const version = freshness.versionAbove<Rec>((r) => r.version);
  const key = freshness.idempotencyKeyIn<Rec>((r) => r.key);
  const rule = freshness.all<unknown, Rec>(version, key);

  it('passes when every rule passes, listing each rule’s check', () => {
    const check = judge(rule, { version: 2, key: 'key-1' }, step({ before: { version: 1 } }));
    expect(check.name).toBe('fresh:all');
    expect(check.pass).toBe(true);
    expect((check.observed as Check[]).map((c) => [c.name, c.pass])).toEqual([
      ['fresh:version_above_baseline', true],
      ['fresh:idempotency_key', true],
    ]);
  });

  it('fails when any one rule fails', () => {
    const ctx = step({ before: { version: 1 } });
    expect(judge(rule, { version: 1, key: 'key-1' }, ctx).pass).toBe(false);
    expect(judge(rule, { version: 2, key: 'other' }, ctx).pass).toBe(false);
    const check = judge(rule, { version: 0, key: 'other' }, ctx);
    expect((check.observed as Check[]).every((c) => !c.pass)).toBe(true);
  });

  it('accepts plain boolean rules and names them "fresh"', () => {
    const yes: FreshnessRule<unknown, Rec> = () => true;
    const no: FreshnessRule<unknown, Rec> = () => false;
    expect(judge(freshness.all(yes, yes), {}, step()).pass).toBe(true);
    const check = judge(freshness.all(yes, no), {}, step());
    expect(check.pass).toBe(false);
    expect(check.observed).toEqual([
      { name: 'fresh', pass: true },
      { name: 'fresh', pass: false },
    ]);
  });

  it('with no rules passes vacuously', () => {
    expect(judge(freshness.all<unknown, Rec>(), {}, step()).pass).toBe(true);
  });

  it('hands the input to content rules', () => {
    const hash = freshness.contentHash<{ body: string }, Rec>(
      (r) => r.hash,
      (input) => input.body,
    );
    const both = freshness.all<{ body: string }, Rec>(
      hash,
      freshness.updatedAfterStart((r) => r.updatedAt),
    );
    expect(judge(both, { hash: 'abc', updatedAt: START }, step(), { body: 'abc' }).pass).toBe(true);
    expect(judge(both, { hash: 'abc', updatedAt: START }, step(), { body: 'abd' }).pass).toBe(false);
  });
});

describe('freshness inside evaluate', () => {
  const anything: StandardSchemaV1<unknown, { status: string }> = {
    '~standard': {
      version: 1,
      vendor: 'test',
      validate: (value) => ({ value: value as { status: string } }),
    },
  };
  const action = defineAction<{ status: string }, Rec>({
    name: 'set_status',
    description: 'Set a status.',
    input: anything,
    target: () => 'thing:1',
    postcondition: 'The thing has the status, written by this operation.',
    before: async () => null,
    execute: async () => ({ ok: true }),
    observe: async () => null,
    expect: (input) => ({ status: input.status }),
    fresh: freshness.versionAbove((r) => r.version),
  });
  const input = { status: 'done' };

  it('a match with a fresh version passes', () => {
    const result = evaluate(action, input, { status: 'done', version: 6 }, step({ before: { version: 5 } }));
    expect(result.verdict).toBe('pass');
    expect(result.checks.map((c) => c.name)).toEqual(['status', 'fresh:version_above_baseline']);
    expect(result.evidence.fresh).toBe(6);
  });

  it('a match that is not provably fresh is stale, not a pass', () => {
    const result = evaluate(action, input, { status: 'done', version: 5 }, step({ before: { version: 5 } }));
    expect(result.verdict).toBe('stale');
  });

  it('a mismatch stays a mismatch whatever the freshness', () => {
    const ctx = step({ before: { version: 5 } });
    expect(evaluate(action, input, { status: 'open', version: 9 }, ctx).verdict).toBe('mismatch');
    expect(evaluate(action, input, { status: 'open', version: 1 }, ctx).verdict).toBe('mismatch');
  });

  it('a baseline evaluation skips freshness', () => {
    const result = evaluate(action, input, { status: 'done', version: 5 }, step(), { baseline: true });
    expect(result.verdict).toBe('pass');
    expect(result.checks.map((c) => c.name)).toEqual(['status']);
  });
});
