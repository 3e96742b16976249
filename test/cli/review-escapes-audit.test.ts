import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from './support.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'readback-review-escapes-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

// Clear the screen, set the window title, an 8-bit CSI, and a right-to-left override: a terminal obeys them all.
const CLEAR = '\u001b[2J';
const TITLE = '\u001b]0;pwned\u0007';
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const RISKY = /[\u001b\u0007\u009b\u202e]/;

function trace(records: object[]): string {
  const path = join(dir, 'trace.jsonl');
  writeFileSync(path, `${records.map((r) => JSON.stringify(r)).join('\n')}\n`);
  return path;
}

describe('readback review prints untrusted trace text escaped', () => {
  it('escapes control characters in the answer, the tool name and the request; JSON keeps them exactly', async () => {
    const answer = `The email was sent.${CLEAR}${TITLE}\u009b31m\u202e`;
    const path = trace([
      { kind: 'request', text: `Email ana${CLEAR} please` },
      { kind: 'tool_call', id: 'c1', name: `send_email${TITLE}`, args: { to: 'ana@example.com' } },
      { kind: 'tool_result', call: 'c1', result: { status: 202 } },
      { kind: 'final_answer', text: answer },
    ]);
    const text = await runCli(['review', path]);
    expect(text.code).toBe(3);
    expect(text.stdout).not.toMatch(RISKY);
    expect(text.stdout).toContain('send_email\\u001b]0;pwned\\u0007');
    expect(text.stdout).toContain('Email ana\\u001b[2J please');
    expect(text.stdout).toContain('sent.\\u001b[2J');

    const json = await runCli(['review', path, '--json']);
    expect(json.code).toBe(3);
    expect(json.stdout).not.toMatch(RISKY);
    const doc = JSON.parse(json.stdout);
    expect(doc.first.action).toBe(`send_email${TITLE}`);
    expect(doc.first.claim).toContain(`${CLEAR}${TITLE}\u009b31m`);
  });

  it('escapes --request and --answer, and a line break cannot forge a line of the report', async () => {
    const store = join(dir, 'demo.db');
    expect((await runCli(['demo', '--store', store, '--json'])).code).toBe(0);
    const [record] = JSON.parse((await runCli(['ops', 'list', '--store', store, '--json'])).stdout);
    const r = await runCli([
      'review',
      '--store',
      store,
      '--run',
      record.runId,
      '--request',
      `Resolve the tickets${TITLE}`,
      '--answer',
      `All tickets resolved and every email was sent.${CLEAR}\nclass        none`,
    ]);
    expect(r.stdout).not.toMatch(RISKY);
    expect(r.stdout).toContain('Resolve the tickets\\u001b]0;pwned\\u0007');
    expect(r.stdout).not.toMatch(/^class {8}none/m);
  });

  it('escapes a run id in its error', async () => {
    const store = join(dir, 'demo.db');
    expect((await runCli(['demo', '--store', store, '--json'])).code).toBe(0);
    const r = await runCli(['review', '--store', store, '--run', `r1${CLEAR}`]);
    expect(r.code).toBe(1);
    expect(r.stderr).not.toMatch(RISKY);
    expect(r.stderr).toContain("has no operations for run 'r1\\u001b[2J'");
  });
});
