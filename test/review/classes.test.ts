import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli/support.js';

const FIXTURES = 'test/fixtures/review';

interface JsonReview {
  supported: boolean;
  calls: number;
  first?: {
    class: string;
    classLabel: string;
    where: string;
    at: { line?: number };
    callId?: string;
    word?: string;
    repair: string;
    recovery: { path: string; safeToRetry: boolean | 'unknown'; step: string };
    evidence?: { status: string; kind: string; at: { line?: number } };
  };
  findings: { class: string; at: { line?: number } }[];
}

async function reviewJson(file: string): Promise<{ code: number; review: JsonReview }> {
  const r = await runCli(['review', `${FIXTURES}/${file}`, '--json']);
  expect(r.stderr).toBe('');
  return { code: r.code, review: JSON.parse(r.stdout) as JsonReview };
}

// One incident per class: where the first unsupported word was used, and what the review must say about it.
const CASES = [
  {
    file: 'no-tool-call.jsonl',
    cls: 'no_tool_call',
    where: 'final_answer',
    line: 2,
    repair: /readback-wrapped tool/,
    recovery: 'retry',
    safe: true,
  },
  {
    file: 'wrong-arguments.jsonl',
    cls: 'wrong_arguments',
    where: 'tool_call',
    line: 2,
    repair: /arguments against the request/,
    recovery: 'human_reconcile',
    safe: false,
  },
  {
    file: 'transport-error.jsonl',
    cls: 'transport_error',
    where: 'tool_result',
    line: 3,
    repair: /read back before retrying/,
    recovery: 'human_reconcile',
    safe: false,
  },
  {
    file: 'accepted-unfinished.jsonl',
    cls: 'accepted_unfinished',
    where: 'tool_result',
    line: 3,
    repair: /mode 'accepted' with a poll budget.*queued, not done/,
    recovery: 'poll',
    safe: true,
  },
  {
    file: 'readback-mismatch.jsonl',
    cls: 'readback_mismatch',
    where: 'tool_result',
    line: 3,
    repair: /target and scope fields/,
    recovery: 'human_reconcile',
    safe: false,
  },
  {
    file: 'readback-unavailable.jsonl',
    cls: 'readback_unavailable',
    where: 'final_answer',
    line: 5,
    repair: /authoritative read/,
    recovery: 'poll',
    safe: 'unknown',
  },
  {
    file: 'wrong-text.jsonl',
    cls: 'wrong_text',
    where: 'final_answer',
    line: 5,
    repair: /bind messages to status/,
    recovery: 'poll',
    safe: true,
  },
] as const;

describe('readback review on one incident per class', () => {
  it.each(CASES)('$file: $cls at line $line', async (c) => {
    const { code, review } = await reviewJson(c.file);
    expect(code).toBe(3);
    expect(review.supported).toBe(false);
    const first = review.first!;
    expect(first.class).toBe(c.cls);
    expect(first.where).toBe(c.where);
    expect(first.at.line).toBe(c.line);
    expect(first.repair).toMatch(c.repair);
    expect(first.recovery.path).toBe(c.recovery);
    expect(first.recovery.safeToRetry).toBe(c.safe);
    // The first finding is the earliest one: nothing unsupported comes before it.
    expect(Math.min(...review.findings.map((f) => f.at.line ?? Number.POSITIVE_INFINITY))).toBe(c.line);
  });

  it('covers every class the issue lists', async () => {
    const { FAILURE_CLASSES } = await import('../../src/review/repair.js');
    expect(new Set(CASES.map((c) => c.cls))).toEqual(new Set(FAILURE_CLASSES));
  });

  it('passes a clean run with exit code 0 and says so', async () => {
    const json = await reviewJson('clean.jsonl');
    expect(json.code).toBe(0);
    expect(json.review.supported).toBe(true);
    expect(json.review.findings).toEqual([]);
    const human = await runCli(['review', `${FIXTURES}/clean.jsonl`]);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('no unsupported transition');
  });

  it('points the transport case at the timeout the adapter called "failed", before the retry that doubled it', async () => {
    const { review } = await reviewJson('transport-error.jsonl');
    expect(review.first!.callId).toBe('c1');
    expect(review.first!.evidence).toMatchObject({ status: 'unknown', kind: 'transport' });
    // The retry's "success" and the answer are later findings, not the first one.
    expect(review.findings.map((f) => f.at.line)).toEqual([3, 5, 7, 7]);
  });

  it('judges accepted work by what the adapter held: HTTP 202 turned into "success"', async () => {
    const { review } = await reviewJson('accepted-unfinished.jsonl');
    expect(review.first!.evidence).toMatchObject({ status: 'pending', at: { line: 4 } });
    expect(review.first!.recovery.step).toContain('readback ops show op-m1');
  });

  it('names the human reconcile command with the operation id', async () => {
    const { review } = await reviewJson('readback-mismatch.jsonl');
    expect(review.first!.recovery.step).toContain('readback ops resolve op-7 --status verified|failed');
  });

  it('keeps the human report short and in review order', async () => {
    const r = await runCli(['review', `${FIXTURES}/accepted-unfinished.jsonl`]);
    expect(r.code).toBe(3);
    const order = [
      'request',
      'first unsupported transition',
      'line 3',
      'class',
      'first repair',
      'recovery',
    ].map((k) => r.stdout.indexOf(k));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    expect(r.stdout).toContain('accepted but unfinished');
    expect(r.stdout.split('\n').length).toBeLessThan(25);
  });
});

describe('regression fixtures', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'readback-review-'));
  });

  it.each([
    ...CASES.map((c) => c.file),
    'clean.jsonl',
  ])('%s: a written fixture re-reviews to the same class', async (file) => {
    const out = join(dir, `${file}.fixture.json`);
    const original = await runCli(['review', `${FIXTURES}/${file}`, '--json', '--fixture-out', out]);
    const first = (JSON.parse(original.stdout) as JsonReview).first;
    const fixture = JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>;
    expect(fixture.readbackReviewFixture).toBe(1);
    expect(fixture.expected).toMatchObject({ class: first?.class ?? null, where: first?.where ?? null });
    const again = await runCli(['review', out, '--json']);
    expect(again.stderr).toBe('');
    expect(again.code).toBe(original.code);
    const second = (JSON.parse(again.stdout) as JsonReview).first;
    expect(second?.class).toBe(first?.class);
    expect(second?.where).toBe(first?.where);
    expect(second?.recovery.path).toBe(first?.recovery.path);
  });

  it('writes request, normalized result, verifier result, expected status and allowed message class', async () => {
    const out = join(dir, 'accepted.json');
    await runCli(['review', `${FIXTURES}/accepted-unfinished.jsonl`, '--fixture-out', out]);
    const fixture = JSON.parse(readFileSync(out, 'utf8'));
    expect(fixture).toMatchObject({
      request: 'Email the Q3 report to ana@example.com.',
      call: { name: 'send_email', target: 'email:ana@example.com' },
      toolResult: { raw: { status: 202, body: { messageId: 'm-1' } }, claimed: 'success' },
      verifier: { status: 'pending', operationId: 'op-m1', errorCode: 'in_progress' },
      expectedStatus: 'pending',
      allowedMessageClass: 'queued_not_done',
      expected: { class: 'accepted_unfinished', where: 'tool_result', location: 'line 3' },
    });
  });

  it('writes a fixture with no call for an effect claimed without one', async () => {
    const out = join(dir, 'none.json');
    await runCli(['review', `${FIXTURES}/no-tool-call.jsonl`, '--fixture-out', out]);
    const fixture = JSON.parse(readFileSync(out, 'utf8'));
    expect(fixture).toMatchObject({ call: null, expectedStatus: null, allowedMessageClass: 'no_effect' });
  });
});
