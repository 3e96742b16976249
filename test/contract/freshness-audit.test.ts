import { afterEach, describe, expect, it } from 'vitest';
import type { Check, FreshnessRule, StepContext } from '../../src/index.js';
import { createRunner, defineAction, freshness, ReadbackError } from '../../src/index.js';
import { anyInput } from '../support/any-input.js';

const START = Date.parse('2026-01-01T12:00:00.000Z');
const HOUR = 3_600_000;

function step(overrides: Partial<StepContext> = {}): StepContext {
  return {
    runId: 'run-1',
    scope: {},
    signal: new AbortController().signal,
    operationId: 'op_1',
    idempotencyKey: 'key-1',
    attempt: 1,
    startedAt: new Date(START),
    ...overrides,
  };
}

function judge<I, O>(rule: FreshnessRule<I, O>, observed: O, ctx: StepContext, input?: I): Check {
  const result = rule(observed, ctx, input as I);
  return typeof result === 'boolean' ? { name: 'fresh', pass: result } : result;
}

/**
 * A row store whose writes the test controls: `lost` drops the write (a replica that never got it), so the
 * truth is the row's own `status`, and the read always returns the row as stored.
 */
function rowSystem(row: Record<string, unknown>) {
  return {
    row,
    writes: 0,
    lost: false,
  };
}

const zone = process.env.TZ;
afterEach(() => {
  if (zone === undefined) delete process.env.TZ;
  else process.env.TZ = zone;
});

describe('freshness.updatedAfterStart: times that do not name their zone or unit', () => {
  const rule = freshness.updatedAfterStart<{ at: unknown }>((r) => r.at);

  it('a zone-less time ("YYYY-MM-DD HH:MM:SS", SQLite CURRENT_TIMESTAMP) is not proof of a fresh write', () => {
    // Four hours before the start, in UTC, as SQLite writes it; read on a server west of UTC.
    process.env.TZ = 'America/Los_Angeles';
    const fourHoursEarly = new Date(START - 4 * HOUR).toISOString().replace('T', ' ').slice(0, 19);
    expect(judge(rule, { at: fourHoursEarly }, step()).pass).toBe(false);
    expect(judge(rule, { at: fourHoursEarly.replace(' ', 'T') }, step()).pass).toBe(false);
  });

  it('times with a zone still count, whatever the server zone', () => {
    process.env.TZ = 'America/Los_Angeles';
    for (const at of [
      '2026-01-01T12:00:05Z',
      '2026-01-01T12:00:05.123456Z',
      '2026-01-01T07:00:05-05:00',
      '2026-01-01 12:00:05+00',
      'Thu, 01 Jan 2026 12:00:05 GMT',
      'Thu, 01 Jan 2026 12:00:05 +0000',
    ]) {
      expect(judge(rule, { at }, step()), at).toMatchObject({ pass: true });
    }
    expect(judge(rule, { at: '2026-01-01T11:59:59Z' }, step()).pass).toBe(false);
  });

  it('epoch microseconds (year 57 000 as milliseconds) are not a time after the start', () => {
    const stale = (START - 4 * HOUR) * 1000;
    expect(judge(rule, { at: stale }, step()).pass).toBe(false);
    expect(judge(rule, { at: new Date(stale) }, step()).pass).toBe(false);
    // Nanoseconds: past what a Date can print; a failed check, not a RangeError.
    expect(judge(rule, { at: stale * 1000 }, step())).toMatchObject({ pass: false, observed: null });
  });

  it('an unusable tolerance is refused when the rule is made, not on every read', () => {
    for (const tolerance of [Number.NaN, Number.POSITIVE_INFINITY, -1, '5000' as unknown as number]) {
      expect(() => freshness.updatedAfterStart((r: { at: unknown }) => r.at, tolerance)).toThrow(
        ReadbackError,
      );
    }
    expect(() => freshness.updatedAfterStart((r: { at: unknown }) => r.at, 0)).not.toThrow();
  });

  it('end to end: a lost write over a row last touched hours ago (zone-less) is not verified', async () => {
    process.env.TZ = 'America/Los_Angeles';
    const hoursAgo = new Date(Date.now() - 4 * HOUR).toISOString().replace('T', ' ').slice(0, 19);
    // The row already says "done" from an earlier run; this run's write is lost.
    const sys = rowSystem({ id: 'r1', status: 'done', updated_at: hoursAgo });
    const action = defineAction<{ status: string }, Record<string, unknown>>({
      name: 'set_status',
      description: 'Sets a status.',
      postcondition: 'The row has the status, written by this run.',
      input: anyInput as never,
      target: () => 'row:r1',
      execute: async (input) => {
        sys.writes++;
        if (!sys.lost) Object.assign(sys.row, { status: input.status, updated_at: new Date().toISOString() });
        return { ok: true };
      },
      observe: async () => ({ ...sys.row }),
      expect: (input) => ({ status: input.status }),
      fresh: freshness.updatedAfterStart((r) => r.updated_at, 1_000),
    });
    sys.lost = true;
    const c = await createRunner().run(action, { status: 'done' }, { runId: 'r' });
    expect(sys.row.updated_at).toBe(hoursAgo); // the truth: this run changed nothing
    expect(c.status).not.toBe('verified');
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'stale_read' });
  });
});

describe('freshness.contentHash and freshness.all: nothing proves nothing', () => {
  it('a missing expected hash and a missing observed hash are not a match', () => {
    const rule = freshness.contentHash<{ sha?: string }, { hash?: string }>(
      (r) => r.hash,
      (input) => input.sha as string,
    );
    expect(judge(rule, {}, step(), {}).pass).toBe(false);
    expect(judge(rule, { hash: '' }, step(), { sha: '' }).pass).toBe(false);
    expect(judge(rule, { hash: 'abc' }, step(), { sha: 'abc' }).pass).toBe(true);
  });

  it('end to end: an upload that never landed is not verified by two missing hashes', async () => {
    const objects = new Map<string, { key: string; size: number; sha?: string }>([
      ['f', { key: 'f', size: 0 }],
    ]);
    const action = defineAction<{ key: string; body: string; sha?: string }, { key: string; sha?: string }>({
      name: 'upload',
      description: 'Uploads a file.',
      postcondition: 'The object holds the body.',
      input: anyInput as never,
      target: (i) => `object:${i.key}`,
      execute: async () => ({ ok: true }), // the provider said ok; nothing was written
      observe: async (i) => objects.get(i.key) ?? null,
      expect: (i) => ({ key: i.key }),
      // The caller forgot to pass `sha`: expected hash undefined, and the object has none either.
      fresh: freshness.contentHash(
        (o) => o.sha,
        (i) => i.sha as string,
      ),
    });
    const c = await createRunner().run(action, { key: 'f', body: 'hello' }, { runId: 'r' });
    expect(objects.get('f')?.size).toBe(0);
    expect(c.status).not.toBe('verified');
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'stale_read' });
  });

  it('all(): a rule whose pass is truthy but not true does not pass', async () => {
    const truthy = (() => ({ name: 'fresh:x', pass: 'false' })) as unknown as FreshnessRule;
    expect(judge(freshness.all(truthy), {}, step()).pass).toBe(false);
    expect(
      judge(
        freshness.all(() => true, truthy),
        {},
        step(),
      ).pass,
    ).toBe(false);

    const row = { status: 'done' }; // already done before this run; the write is lost
    let writes = 0;
    const action = defineAction<{ status: string }, { status: string }>({
      name: 'set_status',
      description: 'Sets a status.',
      postcondition: 'The row has the status.',
      input: anyInput as never,
      target: () => 'row:1',
      execute: async () => {
        writes++;
        return { ok: true };
      },
      observe: async () => ({ ...row }),
      expect: (i) => ({ status: i.status }),
      fresh: freshness.all(truthy),
    });
    const c = await createRunner().run(action, { status: 'done' }, { runId: 'r' });
    expect(writes).toBe(1);
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'stale_read' });
  });
});
