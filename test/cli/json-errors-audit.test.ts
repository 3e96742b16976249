import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from './support.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'readback-json-errors-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

// What a machine does with `--json`: parse stdout, whatever happened.
function failure(stdout: string) {
  return (
    JSON.parse(stdout) as { error: { kind: string; message: string; details?: string[]; exitCode: number } }
  ).error;
}

const PENDING_TRACE = [
  { kind: 'request', text: 'Email the Q3 report to ana@example.com.' },
  { kind: 'tool_call', id: 'c1', name: 'send_email', args: { to: 'ana@example.com' } },
  { kind: 'tool_result', call: 'c1', result: { status: 202 }, claimed: 'success' },
  { kind: 'final_answer', text: 'Sent.' },
];

describe('--json: every outcome is one JSON document on stdout', () => {
  it('review: a missing trace is a usage error document (exit 2), the text stays on stderr', async () => {
    const r = await runCli(['review', join(dir, 'nope.jsonl'), '--json']);
    expect(r.code).toBe(2);
    expect(failure(r.stdout)).toEqual({
      kind: 'usage',
      message: `trace not found: ${join(dir, 'nope.jsonl')}`,
      exitCode: 2,
    });
    expect(r.stderr).toMatch(/^readback: trace not found: /);
  });

  it('review: an invalid trace lists every bad line as details (exit 1)', async () => {
    const path = join(dir, 'bad.jsonl');
    writeFileSync(path, 'garbage\n{"kind":"nope"}\n');
    const r = await runCli(['review', path, '--json']);
    expect(r.code).toBe(1);
    const e = failure(r.stdout);
    expect(e).toMatchObject({ kind: 'failed', exitCode: 1 });
    expect(e.message).toBe(`${path} is not a valid review trace:`);
    expect(e.details).toHaveLength(2);
    expect(e.details?.[0]).toMatch(/^line 1: /);
    expect(e.details?.[1]).toMatch(/^line 2: /);
  });

  it('review: a successful run still prints only the review, with exit 3 for a finding', async () => {
    const path = join(dir, 'ok.jsonl');
    writeFileSync(path, `${PENDING_TRACE.map((r) => JSON.stringify(r)).join('\n')}\n`);
    const r = await runCli(['review', path, '--json']);
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout)).toMatchObject({ source: path, calls: 1, supported: false });
  });

  it.each([
    [['audit', '--json'], 2, 'usage'],
    [['audit', 'nope.mjs', '--json'], 2, 'usage'],
    [['ops', 'list', '--store', 'STORE', '--json'], 2, 'usage'],
    [['ops', 'show', 'op-1', '--store', 'STORE', '--json'], 2, 'usage'],
    [['reconcile', '--store', 'STORE', '--json', '--once'], 2, 'usage'],
    [['review', '--store', 'STORE', '--run', 'r', '--json'], 2, 'usage'],
    [['ops', 'list', '--jsn', '--json'], 2, 'usage'],
    [['ops', 'lst', '--json'], 2, 'usage'],
    [['frob', '--json'], 2, 'usage'],
  ])('%j fails with one JSON document and exit %i, creating no store', async (argv, code, kind) => {
    const store = join(dir, 'missing.db');
    const r = await runCli(argv.map((a) => (a === 'STORE' ? store : a)));
    expect(r.code).toBe(code);
    expect(failure(r.stdout)).toMatchObject({ kind, exitCode: code });
    expect(r.stderr).toMatch(/^readback: /);
    expect(existsSync(store)).toBe(false);
  });

  it('an invalid contract file is a failed document whose details name each problem', async () => {
    const path = join(dir, 'c.yaml');
    writeFileSync(path, 'statuses: 7\n');
    const r = await runCli(['audit', '--contract', path, '--json']);
    expect(r.code).toBe(1);
    const e = failure(r.stdout);
    expect(e.kind).toBe('failed');
    expect(e.message).toMatch(/is invalid/);
    expect(e.details?.length).toBeGreaterThan(0);
  });

  it('without --json stdout stays empty on an error', async () => {
    const r = await runCli(['review', join(dir, 'nope.jsonl')]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
  });

  it('a --json after -- is an argument, not the flag', async () => {
    const r = await runCli(['review', '--', '--json']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
  });
});

describe('an option missing its value does not swallow the next option', () => {
  it('ops resolve --by --json records no operator decision by "--json"', async () => {
    const db = join(dir, 'demo.db');
    expect((await runCli(['demo', '--store', db, '--json'])).code).toBe(0);
    const listed = JSON.parse(
      (await runCli(['ops', 'list', '--store', db, '--status', 'pending', '--json'])).stdout,
    );
    const id = listed[0].id as string;
    const before = (await runCli(['ops', 'show', id, '--store', db, '--json'])).stdout;
    const r = await runCli([
      'ops',
      'resolve',
      id,
      '--store',
      db,
      '--status',
      'failed',
      '--note',
      'carrier lost it',
      '--by',
      '--json',
    ]);
    expect(r.code).toBe(2);
    expect(failure(r.stdout).message).toBe(
      "option '--by' needs a value; got the option '--json' (write --by=--json if that is the value)",
    );
    // The store is as it was: no event, no completion by an actor named '--json'.
    expect((await runCli(['ops', 'show', id, '--store', db, '--json'])).stdout).toBe(before);
  });

  it('ops list --action --json is a usage error, not a filter on an action named --json', async () => {
    const db = join(dir, 'demo.db');
    expect((await runCli(['demo', '--store', db, '--json'])).code).toBe(0);
    const r = await runCli(['ops', 'list', '--store', db, '--action', '--json']);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe(
      "readback: option '--action' needs a value; got the option '--json' (write --action=--json if that is the value)",
    );
  });

  it('still takes a value written inline, a lone dash and a negative number as values', async () => {
    const db = join(dir, 'demo.db');
    expect((await runCli(['demo', '--store', db, '--json'])).code).toBe(0);
    const inline = await runCli(['ops', 'list', '--store', db, '--action=--json', '--json']);
    expect(inline.code).toBe(0);
    expect(JSON.parse(inline.stdout)).toEqual([]);
    const negative = await runCli(['ops', 'list', '--store', db, '--limit', '-5']);
    expect(negative.code).toBe(2);
    expect(negative.stderr).toContain("option '--limit' needs a whole number ≥ 1; got '-5'");
    const dash = await runCli(['ops', 'list', '--store', db, '--action', '-', '--json']);
    expect(dash.code).toBe(0);
    expect(JSON.parse(dash.stdout)).toEqual([]);
  });
});

describe('typos and odd paths an operator makes', () => {
  it.each([
    [['review', 'x.jsonl', '--jsn'], "unknown option '--jsn' for 'readback review'; did you mean '--json'?"],
    [
      ['ops', 'list', '--stor', 'a.db'],
      "unknown option '--stor' for 'readback ops'; did you mean '--store'?",
    ],
    [
      ['reconcile', '--concurency', '2'],
      "unknown option '--concurency' for 'readback reconcile'; did you mean '--concurrency'?",
    ],
    [['audit', '--frob'], "unknown option '--frob' for 'readback audit'"],
  ])('%j names the option and the likely one', async (argv, message) => {
    const r = await runCli(argv);
    expect(r.code).toBe(2);
    expect(r.stderr.split('\n')[0]).toBe(`readback: ${message}`);
  });

  it('a trace, answer file or contract that is a directory is a usage error (exit 2), as a store is', async () => {
    const trace = join(dir, 'calls.jsonl');
    writeFileSync(
      trace,
      `${PENDING_TRACE.slice(0, 3)
        .map((r) => JSON.stringify(r))
        .join('\n')}\n`,
    );
    for (const [argv, what] of [
      [['review', dir], 'trace'],
      [['review', trace, '--answer-file', dir], 'answer file'],
      [['audit', '--contract', dir], 'contract file'],
    ] as const) {
      const r = await runCli([...argv, '--json']);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(failure(r.stdout).message).toBe(`${what} ${dir} is a directory, not a file`);
    }
  });

  it('ops help shows that resolve takes --json', async () => {
    const r = await runCli(['ops', '--help']);
    expect(r.stdout).toContain(
      'readback ops resolve <id> --status verified|failed --note "..." --by NAME [--store S] [--json]',
    );
  });
});
