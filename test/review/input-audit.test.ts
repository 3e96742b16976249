import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runCli } from '../cli/support.js';

// A disk that fills up halfway through the next write of a file whose name ends in `failOn`.
const disk = vi.hoisted(() => ({ failOn: undefined as string | undefined }));
vi.mock('node:fs', async (original) => {
  const real = await original<typeof import('node:fs')>();
  const writeFileSync: typeof real.writeFileSync = (file, data, options) => {
    if (disk.failOn !== undefined && typeof file === 'string' && typeof data === 'string') {
      if (file.endsWith(disk.failOn) || file.endsWith('.tmp')) {
        real.writeFileSync(file, data.slice(0, data.length / 2), options);
        throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      }
    }
    real.writeFileSync(file, data, options);
  };
  return { ...real, writeFileSync, default: { ...real, writeFileSync } };
});

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'readback-input-'));
  disk.failOn = undefined;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const LINES = [
  { kind: 'request', text: 'Refund order 42.' },
  { kind: 'tool_call', id: 'c1', name: 'refund', args: { orderId: '42' } },
  { kind: 'tool_result', call: 'c1', result: { status: 202 }, claimed: 'success' },
  { kind: 'final_answer', text: 'Refunded order 42.' },
].map((r) => JSON.stringify(r));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const event = (fields: object) =>
  JSON.stringify({
    v: 1,
    runId: 'r1',
    callId: 'c1',
    action: 'refund',
    at: '2026-01-01T00:00:00Z',
    ...fields,
  });

describe('review of real-world trace files', () => {
  it(
    'reviews a trace with one huge line (a 150 KB argument) in well under a second, not minutes',
    { timeout: 60_000 },
    async () => {
      const huge = {
        kind: 'tool_call',
        id: 'c1',
        name: 'refund',
        args: { orderId: '42', blob: 'x'.repeat(150_000) },
      };
      const path = file('huge.jsonl', [LINES[0], JSON.stringify(huge), LINES[2], LINES[3]].join('\n'));
      const started = Date.now();
      const r = await runCli(['review', path, '--json']);
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(r.code).toBe(3);
      expect(JSON.parse(r.stdout).first).toMatchObject({
        class: 'accepted_unfinished',
        where: 'tool_result',
      });
    },
  );

  it("says '-' (stdin) is not read, instead of 'trace not found: -'", async () => {
    const r = await runCli(['review', '-']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      "readback: review reads a trace file, not stdin ('-'): save the trace to a file and name it\n",
    );
  });

  it('names a readback event among plain records, and a plain record among readback events', async () => {
    const plainFirst = file('a.jsonl', `${LINES.join('\n')}\n${event({ type: 'completion', seq: 1 })}\n`);
    const a = await runCli(['review', plainFirst]);
    expect(a.code).toBe(1);
    expect(a.stderr).toBe(
      `readback: ${plainFirst} is not a valid review trace:\n  line 5: field 'kind': is required: this is a readback trace event (type "completion"), and one file cannot mix the two formats\n`,
    );
    const traceFirst = file(
      'b.jsonl',
      `${event({ type: 'tool.selected', seq: 1, tool: 'refund' })}\n${LINES[1]}\n`,
    );
    const b = await runCli(['review', traceFirst]);
    expect(b.code).toBe(1);
    expect(b.stderr).toBe(
      `readback: ${traceFirst} is not a valid review trace:\n  line 2: field 'type': is required: this is a plain review record (kind "tool_call"), and one file cannot mix the two formats\n`,
    );
  });

  it('skips event types it does not know (added within version 1) and refuses another version, naming the line', async () => {
    const selected = event({ type: 'tool.selected', seq: 1, tool: 'refund', target: 'order:42' });
    const done = event({ type: 'completion', seq: 3, status: 'pending', operationId: 'op-1' });
    const known = await runCli(['review', file('k.jsonl', `${selected}\n${done}\n`), '--json']);
    const future = file('f.jsonl', `${selected}\n${event({ type: 'future.step', seq: 2 })}\n${done}\n`);
    const unknown = await runCli(['review', future, '--json']);
    expect(unknown.code).toBe(known.code);
    expect({ ...JSON.parse(unknown.stdout), source: '' }).toEqual({
      ...JSON.parse(known.stdout),
      source: '',
    });
    const v2 = file(
      'v2.jsonl',
      `${selected}\n${event({ type: 'completion', seq: 3, status: 'verified', v: 2 })}\n`,
    );
    const r = await runCli(['review', v2]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${v2} is not a valid review trace:\n  line 2: field 'v': must be 1, got 2`);
  });

  it('names the line where a fixture cut short or mis-edited stops parsing', async () => {
    const trace = file('t.jsonl', `${LINES.join('\n')}\n`);
    const out = join(dir, 'fixture.json');
    await runCli(['review', trace, '--fixture-out', out]);
    const whole = readFileSync(out, 'utf8');
    const cut = file('cut.json', whole.slice(0, whole.indexOf('"toolResult"')));
    const r = await runCli(['review', cut]);
    expect(r.code).toBe(1);
    const line = whole.slice(0, whole.indexOf('"toolResult"')).split('\n').length;
    expect(line).toBeGreaterThan(5);
    expect(r.stderr).toContain(`${cut} is not a valid review trace:\n  line ${line}: is not valid JSON (`);
    expect(r.stderr).toContain('a fixture cut short or edited by hand');
  });
});

describe('review --fixture-out writes a whole fixture or none', () => {
  const trace = () => file('t.jsonl', `${LINES.join('\n')}\n`);

  it('replaces an existing file with the new fixture', async () => {
    const out = file('fixture.json', 'an older fixture');
    const r = await runCli(['review', trace(), '--fixture-out', out]);
    expect(r.code).toBe(3);
    expect(JSON.parse(readFileSync(out, 'utf8')).expected.class).toBe('accepted_unfinished');
    expect(readdirSync(dir).sort()).toEqual(['fixture.json', 't.jsonl']);
  });

  it('leaves an existing fixture intact and no partial file when the disk fills mid-write', async () => {
    const path = trace();
    const out = file('fixture.json', 'the fixture a test loads');
    disk.failOn = 'fixture.json';
    const r = await runCli(['review', path, '--fixture-out', out]);
    disk.failOn = undefined;
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `readback: could not write fixture ${out}: ENOSPC: no space left on device, write\n`,
    );
    expect(readFileSync(out, 'utf8')).toBe('the fixture a test loads');
    expect(readdirSync(dir).sort()).toEqual(['fixture.json', 't.jsonl']);
  });

  it('names the missing directory, or the directory in the way, and writes nothing', async () => {
    const path = trace();
    const missing = join(dir, 'no', 'such', 'fixture.json');
    const a = await runCli(['review', path, '--fixture-out', missing]);
    expect(a.code).toBe(1);
    expect(a.stderr).toBe(
      `readback: could not write fixture ${missing}: directory ${join(dir, 'no', 'such')} does not exist\n`,
    );
    expect(existsSync(join(dir, 'no'))).toBe(false);
    const inTheWay = join(dir, 'fixture.json');
    mkdirSync(inTheWay);
    const b = await runCli(['review', path, '--fixture-out', inTheWay]);
    expect(b.code).toBe(1);
    expect(b.stderr).toBe(`readback: could not write fixture ${inTheWay}: it is a directory\n`);
    expect(readdirSync(dir).sort()).toEqual(['fixture.json', 't.jsonl']);
    expect(readdirSync(inTheWay)).toEqual([]);
  });
});
