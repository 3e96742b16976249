import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { callbackSink, createRunner, jsonlSink, type TraceEvent } from '../../src/index.js';
import { createHelpdesk } from '../../src/testing/index.js';

const dir = mkdtempSync(join(tmpdir(), 'readback-jsonl-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function lines(path: string): TraceEvent[] {
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as TraceEvent);
}

describe('sinks', () => {
  it('the JSONL file holds exactly the events the callback saw, one per line, after flush', async () => {
    const path = join(dir, 'run.jsonl');
    const file = jsonlSink(path);
    const seen: TraceEvent[] = [];
    const hd = createHelpdesk();
    hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
    const runner = createRunner({
      clock: hd.clock,
      trace: { sinks: [file, callbackSink((e) => void seen.push(e))] },
    });
    await runner.run(
      hd.actions.updateTicket,
      { id: 'T-104', status: 'resolved' },
      { runId: 'r1', scope: { tenant: 'acme' } },
    );
    await file.flush();
    expect(lines(path)).toEqual(seen);
    expect(seen.at(-1)?.type).toBe('completion');
    await file.close();
    expect(() => file.write(seen[0]!)).toThrow(/closed/);
  });

  it('appends by default and truncates with append: false', async () => {
    const path = join(dir, 'append.jsonl');
    writeFileSync(path, '{"old":true}\n');
    const event = {
      v: 1,
      type: 'run.error',
      seq: 1,
      at: 'x',
      runId: 'r',
      callId: 'c',
      action: 'a',
      error: { name: 'E', message: 'm' },
    } as const;
    const appending = jsonlSink(path);
    appending.write(event);
    await appending.close();
    expect(readFileSync(path, 'utf8').trim().split('\n')).toHaveLength(2);
    const fresh = jsonlSink(path, { append: false });
    fresh.write(event);
    await fresh.close();
    expect(lines(path)).toEqual([event]);
  });

  it('a file that cannot be opened fails flush and later writes, never the run', async () => {
    const file = jsonlSink(join(dir, 'no-such-dir', 'x.jsonl'));
    const errors: unknown[] = [];
    const hd = createHelpdesk();
    hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
    const runner = createRunner({
      clock: hd.clock,
      trace: { sinks: [file], onSinkError: (e) => void errors.push(e) },
    });
    await expect(file.flush()).rejects.toThrow(/ENOENT/);
    const c = await runner.run(
      hd.actions.updateTicket,
      { id: 'T-104', status: 'resolved' },
      { runId: 'r', scope: { tenant: 'acme' } },
    );
    expect(c.status).toBe('verified');
    expect(errors.length).toBeGreaterThan(0);
    expect(String(errors[0])).toMatch(/ENOENT/);
  });

  it('rejects a missing path or callback', () => {
    expect(() => jsonlSink('')).toThrow(/jsonlSink\(path\)/);
    expect(() => callbackSink(undefined as never)).toThrow(/callbackSink/);
  });
});
