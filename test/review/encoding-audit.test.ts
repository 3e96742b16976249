import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../cli/support.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'readback-encoding-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const LINES = [
  { kind: 'request', text: 'Refund order 42 for José.' },
  { kind: 'tool_call', id: 'c1', name: 'refund', args: { orderId: '42' } },
  { kind: 'tool_result', call: 'c1', result: { status: 202 }, claimed: 'success' },
  { kind: 'final_answer', text: 'Refunded José.' },
].map((r) => JSON.stringify(r));

describe('review reads its trace as UTF-8 and says so when it is not', () => {
  it('refuses a Latin-1 trace naming the line, instead of quoting U+FFFD as evidence in a fixture', async () => {
    const path = join(dir, 'latin1.jsonl');
    const fixture = join(dir, 'fixture.json');
    writeFileSync(path, Buffer.from(`${LINES.join('\n')}\n`, 'latin1'));
    const r = await runCli(['review', path, '--json', '--fixture-out', fixture]);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).error.message).toBe(
      `trace ${path} is not UTF-8 text: line 1 has invalid bytes`,
    );
    expect(existsSync(fixture)).toBe(false);
  });

  it('refuses a UTF-16 trace (PowerShell redirect) with a hint instead of "not valid JSON" on every line', async () => {
    const path = join(dir, 'utf16.jsonl');
    writeFileSync(
      path,
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`${LINES.join('\r\n')}\r\n`, 'utf16le')]),
    );
    const r = await runCli(['review', path]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `readback: trace ${path} is UTF-16 text; readback reads UTF-8 (convert it, e.g. iconv -f UTF-16 -t UTF-8)\n`,
    );
  });

  it('reads a UTF-8 trace with a BOM and Windows line endings like the plain one', async () => {
    const plain = join(dir, 'plain.jsonl');
    const windows = join(dir, 'windows.jsonl');
    writeFileSync(plain, `${LINES.join('\n')}\n`);
    writeFileSync(windows, `\ufeff${LINES.join('\r\n')}\r\n`);
    const a = await runCli(['review', plain, '--json']);
    const b = await runCli(['review', windows, '--json']);
    expect(a.code).toBe(3);
    expect(b.code).toBe(3);
    expect({ ...JSON.parse(b.stdout), source: 'x' }).toEqual({ ...JSON.parse(a.stdout), source: 'x' });
    expect(JSON.parse(a.stdout).request.text).toBe('Refund order 42 for José.');
  });

  it('still skips a last line torn inside a character by a crashed writer', async () => {
    const path = join(dir, 'torn.jsonl');
    const whole = Buffer.from(`${LINES.join('\n')}\n`);
    const torn = Buffer.from('{"kind":"final_answer","text":"Jos\u00e9');
    writeFileSync(
      path,
      Buffer.concat([whole.subarray(0, whole.length - LINES[3]!.length - 1), torn.subarray(0, -1)]),
    );
    const r = await runCli(['review', path, '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout).source).toMatch(/torn/);
  });

  it('refuses a Latin-1 answer file and contract file too', async () => {
    const trace = join(dir, 'plain.jsonl');
    writeFileSync(trace, `${LINES.slice(0, 3).join('\n')}\n`);
    const answer = join(dir, 'answer.txt');
    writeFileSync(answer, Buffer.from('Refunded José.\nDone.', 'latin1'));
    const r = await runCli(['review', trace, '--answer-file', answer]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`readback: answer file ${answer} is not UTF-8 text: line 1 has invalid bytes\n`);

    const contract = join(dir, 'c.yaml');
    writeFileSync(contract, Buffer.from('# Politique de José\nstatuses: [verified]\n', 'latin1'));
    const a = await runCli(['audit', '--contract', contract, '--json']);
    expect(a.code).toBe(1);
    expect(JSON.parse(a.stdout).error.message).toBe(
      `contract file ${contract} is not UTF-8 text: line 1 has invalid bytes`,
    );
  });
});
