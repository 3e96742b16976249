import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readIncident } from '../../src/review/adapters.js';
import { review } from '../../src/review/analyze.js';
import { describeIssue } from '../../src/review/issues.js';
import { claimLevel } from '../../src/review/ladder.js';
import { parsePlainTrace } from '../../src/review/plain.js';
import { runCli } from '../cli/support.js';

const dir = mkdtempSync(join(tmpdir(), 'readback-review-plain-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function lines(...records: unknown[]): string {
  return records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n');
}

function issuesOf(text: string): string[] {
  const read = parsePlainTrace(text, 't.jsonl');
  if (read.ok) throw new Error('expected the trace to be refused');
  return read.issues.map(describeIssue);
}

describe('the plain JSONL trace format', () => {
  it('names the line and field of every bad record, all at once', () => {
    const issues = issuesOf(
      lines(
        { kind: 'request' },
        '{not json',
        { kind: 'tool_call', id: 'c1' },
        { kind: 'tool_result', call: 'c9', result: {} },
        { kind: 'verification', call: 'c1', status: 'done' },
        { kind: 'teleport' },
        [1, 2],
      ),
    );
    expect(issues).toEqual([
      "line 1: field 'text': is required",
      expect.stringMatching(/^line 2: is not valid JSON/),
      "line 3: field 'name': is required",
      `line 4: field 'call': "c9" names no earlier tool_call`,
      `line 5: field 'call': "c1" names no earlier tool_call`,
      'line 5: field \'status\': must be one of verified, pending, failed, partial, no_op, unknown, got "done"',
      expect.stringMatching(/^line 6: field 'kind': must be one of request, tool_call/),
      'line 7: must be a JSON object, got an array',
    ]);
  });

  it('requires a result or an error, and refuses duplicate ids, results and answers', () => {
    const issues = issuesOf(
      lines(
        { kind: 'tool_call', id: 'c1', name: 'x' },
        { kind: 'tool_call', id: 'c1', name: 'y' },
        { kind: 'tool_result', call: 'c1' },
        { kind: 'tool_result', call: 'c1', result: null },
        { kind: 'tool_result', call: 'c1', result: null },
        { kind: 'final_answer', text: 'a' },
        { kind: 'final_answer', text: 'b' },
        { kind: 'verification', call: 'c1', status: 'verified', checks: [{ name: 'n' }] },
      ),
    );
    expect(issues).toEqual([
      `line 2: field 'id': "c1" is already used by the tool_call on line 1`,
      'line 3: field \'result\': is required unless "error" says the call raised (use null for an empty result)',
      `line 5: field 'call': "c1" already has a tool_result on line 4`,
      'line 7: a second final_answer (the first is on line 6)',
      'line 8: field \'checks[0]\': must be an object with a string "name" and a boolean "pass"',
    ]);
  });

  it('reports a bad trace through the CLI with exit code 1 and the line numbers', async () => {
    const file = join(dir, 'bad.jsonl');
    writeFileSync(file, lines({ kind: 'request', text: 'x' }, { kind: 'tool_result', result: 1 }));
    const r = await runCli(['review', file]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("line 2: field 'call': is required");
  });

  it('names the broken line when the first record is not JSON, and calls an empty input empty', () => {
    const issues = (text: string) => {
      const read = readIncident(text, 't.jsonl');
      if (read.ok) throw new Error('expected the input to be refused');
      return read.issues.map(describeIssue);
    };
    // The first line is cut short; the reader of the format the rest is in reports it with the others.
    expect(issues(lines('', '{"kind":"request","text":"hi"', { kind: 'tool_call', id: 'c1' }))).toEqual([
      expect.stringMatching(/^line 2: is not valid JSON \(/),
      "line 3: field 'name': is required",
    ]);
    expect(issues(lines('', '', '{"kind":'))).toEqual([
      expect.stringMatching(/^line 3: is not valid JSON \(/),
    ]);
    for (const blank of ['', '\n  \n']) {
      expect(issues(blank)).toEqual([expect.stringMatching(/^the input is empty; expected JSONL records/)]);
    }
  });

  it('reads a trace that starts with a byte-order mark', async () => {
    const file = join(dir, 'bom.jsonl');
    writeFileSync(
      file,
      `\uFEFF${lines({ kind: 'request', text: 'hi' }, { kind: 'final_answer', text: 'ok' })}`,
    );
    const r = await runCli(['review', file]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('request      line 1: "hi"');
  });

  it('refuses records with "type" that are not readback trace events', () => {
    const read = readIncident(lines({ type: 'run_started', runId: 'r' }), 't.jsonl');
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.issues[0]).toMatchObject({ line: 1, field: 'callId' });
  });

  it('derives a target from the arguments so the guard can tie "T-9 is resolved" to the call', () => {
    const read = parsePlainTrace(
      lines(
        { kind: 'tool_call', id: 'c1', name: 'update_ticket', args: { id: 'T-9', status: 'resolved' } },
        { kind: 'tool_result', call: 'c1', result: { ok: true } },
        { kind: 'verification', call: 'c1', status: 'verified' },
        { kind: 'verification', call: 'c1', status: 'verified' },
      ),
      't',
    );
    expect(read.ok).toBe(false);
    const ok = parsePlainTrace(
      lines(
        { kind: 'tool_call', id: 'c1', name: 'update_ticket', args: { id: 'T-9', status: 'resolved' } },
        { kind: 'tool_result', call: 'c1', result: { ok: true } },
        { kind: 'final_answer', text: 'T-9 is resolved.' },
      ),
      't',
    );
    if (!ok.ok) throw new Error('trace refused');
    expect(ok.value.calls[0]!.target).toBe('update_ticket:T-9');
    // A bare {ok: true} is not a read-back: the claim is unsupported and no read-back is the class.
    expect(review(ok.value).first).toMatchObject({
      class: 'readback_unavailable',
      at: { line: 3 },
      callId: 'c1',
    });
  });
});

describe('the word ladder and the formatter check', () => {
  it('ranks status words and judges sentences with the guard vocabulary', () => {
    expect(claimLevel('success')).toBe('done');
    expect(claimLevel('202 Accepted')).toBe('accepted');
    expect(claimLevel('in progress')).toBe('running');
    expect(claimLevel('The email was delivered.')).toBe('done');
    expect(claimLevel('The email is queued, not delivered yet.')).toBe('accepted');
    expect(claimLevel('unknown')).toBe('none');
    expect(claimLevel('failed')).toBe('failed');
  });

  it('catches a formatter that rendered a running job as completed, at the verification line', () => {
    const read = parsePlainTrace(
      lines(
        { kind: 'request', text: 'Export the report' },
        { kind: 'tool_call', id: 'c1', name: 'export_report', args: { id: 'R-1' } },
        { kind: 'tool_result', call: 'c1', result: { state: 'running' }, claimed: 'running' },
        { kind: 'verification', call: 'c1', status: 'pending', message: 'Export completed.' },
      ),
      't',
    );
    if (!read.ok) throw new Error('trace refused');
    expect(review(read.value).first).toMatchObject({
      class: 'wrong_text',
      where: 'readback_message',
      at: { line: 4 },
    });
  });
});

describe('readback review usage', () => {
  it('needs exactly one input, keeps --run to --store and never overrides what the input says', async () => {
    expect((await runCli(['review'])).code).toBe(2);
    expect((await runCli(['review', 'x.jsonl', '--store', 'y.db'])).code).toBe(2);
    const r = await runCli(['review', 'test/fixtures/review/clean.jsonl', '--answer', 'x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("option '--answer': the input already has a final answer (line 5)");
    expect((await runCli(['review', 'test/fixtures/review/clean.jsonl', '--run', 'r'])).code).toBe(2);
    expect((await runCli(['review', '--store', 'x.db'])).stderr).toContain("needs '--run ID'");
  });

  it('documents the exit codes in its help', async () => {
    const r = await runCli(['review', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /Exit code: 0 when every claim is backed by its evidence, 3 when an unsupported/,
    );
  });
});
