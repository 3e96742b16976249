import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunner, jsonlSink, type TraceEvent } from '../../src/index.js';
import { readIncident } from '../../src/review/adapters.js';
import { createHelpdesk } from '../../src/testing/index.js';

const dir = mkdtempSync(join(tmpdir(), 'readback-jsonl-audit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const event = (callId: string): TraceEvent => ({
  v: 1,
  type: 'run.error',
  seq: 1,
  at: '2026-01-01T00:00:00.000Z',
  runId: 'r',
  callId,
  action: 'a',
  error: { name: 'E', message: 'm' },
});

// /dev/full accepts the open and fails every write with ENOSPC: a full disk, on demand.
const full = existsSync('/dev/full') ? '/dev/full' : undefined;

describe('jsonlSink on a full disk', () => {
  it.skipIf(!full)(
    'close() rejects when lines never reached the file, and the run is unaffected',
    async () => {
      const sink = jsonlSink(full!);
      const errors: unknown[] = [];
      const hd = createHelpdesk();
      hd.tickets.seed([{ id: 'T-1', tenant: 'acme' }]);
      const runner = createRunner({
        clock: hd.clock,
        trace: { sinks: [sink], onSinkError: (error) => void errors.push(error) },
      });
      const done = await runner.run(
        hd.actions.updateTicket,
        { id: 'T-1', status: 'resolved' },
        { runId: 'r1', scope: { tenant: 'acme' } },
      );
      expect(done.status).toBe('verified');
      // Closed right away, as a short script does: the batch goes out and fails inside close().
      await expect(sink.close()).rejects.toThrow(/ENOSPC/);
    },
  );

  it.skipIf(!full)(
    'a write right after a failed flush throws, so onSinkError hears of the lost line',
    async () => {
      const sink = jsonlSink(full!);
      sink.write(event('c1'));
      await expect(sink.flush()).rejects.toThrow(/ENOSPC/);
      expect(() => sink.write(event('c2'))).toThrow(/ENOSPC/);
      await expect(sink.close()).rejects.toThrow(/ENOSPC/);
    },
  );
});

describe('jsonlSink appending to a trace whose last line a killed process cut short', () => {
  it("starts on a new line, so the cut line stays the only broken one and this run's first event survives", async () => {
    const path = join(dir, 'restarted.jsonl');
    const whole = JSON.stringify(event('c0'));
    writeFileSync(path, `${whole}\n${JSON.stringify(event('c1')).slice(0, 30)}`);
    const sink = jsonlSink(path);
    sink.write(event('c2'));
    sink.write(event('c3'));
    await sink.close();
    const lines = readFileSync(path, 'utf8').split('\n');
    expect(lines).toHaveLength(5);
    expect(lines[4]).toBe('');
    expect(JSON.parse(lines[2]!)).toEqual(event('c2'));
    expect(JSON.parse(lines[3]!)).toEqual(event('c3'));
    // The review names the one cut line instead of a glued line holding the new run's first event.
    const read = readIncident(readFileSync(path, 'utf8'), path);
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.issues.map((i) => i.line)).toEqual([2]);
  });

  it('adds nothing to a file that ends with a whole line', async () => {
    const path = join(dir, 'whole.jsonl');
    writeFileSync(path, `${JSON.stringify(event('c0'))}\n`);
    const sink = jsonlSink(path);
    sink.write(event('c1'));
    await sink.close();
    expect(readFileSync(path, 'utf8')).toBe(
      `${JSON.stringify(event('c0'))}\n${JSON.stringify(event('c1'))}\n`,
    );
  });
});
