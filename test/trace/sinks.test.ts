import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { callbackSink, createRunner, jsonlSink, ReadbackError, type TraceEvent } from '../../src/index.js';
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

  it('a path that cannot be opened is refused by jsonlSink() itself, naming the path and the reason', () => {
    const cases: [string, RegExp][] = [
      [join(dir, 'no-such-dir', 'x.jsonl'), /ENOENT/],
      [dir, /EISDIR/],
    ];
    for (const [path, reason] of cases) {
      let error: unknown;
      try {
        jsonlSink(path);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ReadbackError);
      expect(error).toMatchObject({ code: 'invalid_options', field: 'jsonlSink(path)' });
      expect((error as Error).message).toContain(`cannot open ${path} for writing`);
      expect((error as Error).message).toMatch(reason);
    }
    expect(existsSync(join(dir, 'no-such-dir'))).toBe(false);
    expect(() => jsonlSink(join(dir, 'a.jsonl'), { append: 'no' as never })).toThrow(
      /jsonlSink\(options\)\.append: must be true or false/,
    );
  });

  // /dev/full opens, and every write to it fails with ENOSPC: a disk that fills up mid-run.
  it.skipIf(!existsSync('/dev/full'))(
    'a file whose writes fail fails flush and later writes, never the run',
    async () => {
      const file = jsonlSink('/dev/full');
      const errors: unknown[] = [];
      const hd = createHelpdesk();
      hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
      const runner = createRunner({
        clock: hd.clock,
        trace: { sinks: [file], onSinkError: (e) => void errors.push(e) },
      });
      const first = await runner.run(
        hd.actions.updateTicket,
        { id: 'T-104', status: 'resolved' },
        { runId: 'r', scope: { tenant: 'acme' } },
      );
      expect(first.status).toBe('verified');
      await expect(file.flush()).rejects.toThrow(/ENOSPC/);
      // The stream reports its 'error' event once it has closed the file, a little after the failed write.
      const probe = { type: 'run.started' } as TraceEvent;
      await vi.waitFor(() => expect(() => file.write(probe)).toThrow(/ENOSPC/));
      const c = await runner.run(
        hd.actions.updateTicket,
        { id: 'T-104', status: 'open' },
        { runId: 'r2', scope: { tenant: 'acme' } },
      );
      expect(c.status).toBe('verified');
      expect(errors.length).toBeGreaterThan(0);
      expect(String(errors[0])).toMatch(/ENOSPC/);
      await expect(file.close()).rejects.toThrow(/ENOSPC/);
    },
  );

  it('batches survive the edges: many lines, lines bigger than a batch, non-ASCII text, close without flush', async () => {
    const path = join(dir, 'batches.jsonl');
    const file = jsonlSink(path, { append: false });
    const base = { v: 1, type: 'run.error', runId: 'r', callId: 'c', action: 'a' } as const;
    const written: TraceEvent[] = [];
    const write = (seq: number, message: string) => {
      const event: TraceEvent = { ...base, seq, at: `t${seq}`, error: { name: 'E', message } };
      written.push(event);
      file.write(event);
    };
    // ~1 000 lines of ~100 bytes cross the 64 KiB batch size more than once; some carry two-byte and
    // four-byte (surrogate pair) characters, whose UTF-8 is longer than their string length.
    for (let i = 0; i < 1000; i++) write(i, i % 7 === 0 ? `“quoted” ✓ 𝄞 line ${i}` : `line ${i}`);
    write(1000, 'x'.repeat(200_000)); // bigger than a whole batch: written on its own, in order
    write(1001, '“'.repeat(30_000)); // fits in characters, not in bytes (90 000 bytes of UTF-8)
    write(1002, 'after the big ones');
    await file.close(); // no flush: close must still write every acknowledged line
    expect(lines(path)).toEqual(written);
  });

  it('a sink that lists its types gets only those, and events no sink takes are not built', async () => {
    const hd = createHelpdesk();
    hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
    const path = join(dir, 'types.jsonl');
    const file = jsonlSink(path, { append: false, types: ['completion'] });
    const seen: TraceEvent[] = [];
    const types = ['run.started', 'observe', 'completion'] as const;
    const runner = createRunner({
      clock: hd.clock,
      trace: { sinks: [file, callbackSink((e) => void seen.push(e), { types })] },
    });
    const c = await runner.run(
      hd.actions.updateTicket,
      { id: 'T-104', status: 'resolved' },
      { runId: 'r1', scope: { tenant: 'acme' } },
    );
    expect(c.status).toBe('verified');
    expect(seen.map((e) => e.type)).toEqual(['run.started', 'observe', 'observe', 'completion']);
    await file.close();
    expect(lines(path).map((e) => e.type)).toEqual(['completion']);
    expect(() => callbackSink(() => {}, { types: ['nonsense' as never] })).toThrow(
      /callbackSink\(options\)\.types/,
    );
    expect(() => jsonlSink(join(dir, 'bad.jsonl'), { types: 'completion' as never })).toThrow(/event types/);
  });

  it('rejects a missing path or callback', () => {
    expect(() => jsonlSink('')).toThrow(/jsonlSink\(path\)/);
    expect(() => callbackSink(undefined as never)).toThrow(/callbackSink/);
  });

  // Each used to be accepted by createRunner and then fail later: a types array threw out of the run itself,
  // a malformed redaction threw a TypeError, a handler that is not a function swallowed every sink error.
  it('createRunner refuses trace settings the tracer would trip over later', async () => {
    const hd = createHelpdesk();
    hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
    const seen: string[] = [];
    const write = (e: TraceEvent) => void seen.push(e.type);
    const cases: [Record<string, unknown>, string][] = [
      [{ sinks: [{ write, types: ['completion'] }] }, 'trace.sinks[0].types'],
      [{ sinks: [{ write }], redaction: { rules: 'password' } }, 'trace.redaction.rules'],
      [{ sinks: [{ write }], redaction: 'on' }, 'trace.redaction'],
      [{ sinks: [{ write }], redaction: { defaults: 'no' } }, 'trace.redaction.defaults'],
      [
        { sinks: [{ write }], redaction: { rules: [{ name: 'x', value: /x/, replace: 'y' }] } },
        'trace.redaction.rules[0].replace',
      ],
      [{ sinks: [{ write }], onSinkError: 'warn' }, 'trace.onSinkError'],
      [{ sinks: [{ write }], claimOf: {} }, 'trace.claimOf'],
      [{ sinks: [{ write }], recordArguments: 'yes' }, 'trace.recordArguments'],
    ];
    for (const [trace, field] of cases) {
      expect(() => createRunner({ clock: hd.clock, trace: trace as never })).toThrow(
        expect.objectContaining({ code: 'invalid_options', field }),
      );
    }
    // A Set of types is what the sink type asks for, and works.
    const runner = createRunner({
      clock: hd.clock,
      trace: { sinks: [{ write, types: new Set(['completion']) }] },
    });
    await runner.run(
      hd.actions.updateTicket,
      { id: 'T-104', status: 'resolved' },
      { runId: 'r', scope: { tenant: 'acme' } },
    );
    expect(seen).toEqual(['completion']);
  });
});
