import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunner, defineAction, jsonlSink, type TraceEvent } from '../../src/index.js';
import { readIncident } from '../../src/review/adapters.js';
import { parseReadbackTrace } from '../../src/review/readback-trace.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { anyInput } from '../support/any-input.js';
import { compileSources } from '../support/compile.mjs';

const dir = mkdtempSync(join(tmpdir(), 'readback-jsonl-audit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const linesOf = (path: string) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as TraceEvent);

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

describe('jsonlSink close() and flush() around the end', () => {
  // Enough lines for several batches.
  const fill = (sink: ReturnType<typeof jsonlSink>, count: number) => {
    for (let i = 0; i < count; i++) sink.write(event(`c${i}`));
  };

  it('a second close() resolves only once every line is in the file, as the first does', async () => {
    const path = join(dir, 'close-twice.jsonl');
    const sink = jsonlSink(path);
    fill(sink, 3000);
    const first = sink.close();
    await sink.close();
    expect(linesOf(path)).toHaveLength(3000);
    await first;
  });

  it('a second close() of a sink whose writes failed rejects too, never claims the lines are there', async () => {
    if (!full) return;
    const sink = jsonlSink(full);
    sink.write(event('c1'));
    const first = sink.close();
    await expect(sink.close()).rejects.toThrow(/ENOSPC/);
    await expect(first).rejects.toThrow(/ENOSPC/);
  });

  it('flush() while close() is under way waits for the end instead of resolving at once', async () => {
    const path = join(dir, 'flush-while-closing.jsonl');
    const sink = jsonlSink(path);
    fill(sink, 3000);
    const closing = sink.close();
    await sink.flush();
    expect(linesOf(path)).toHaveLength(3000);
    await closing;
    // After the end, flush() still says whether the lines made it: it keeps close()'s answer.
    if (!full) return;
    const failed = jsonlSink(full);
    failed.write(event('c1'));
    await expect(failed.close()).rejects.toThrow(/ENOSPC/);
    await expect(failed.flush()).rejects.toThrow(/ENOSPC/);
  });

  it('writes full batches while the event loop never turns, so a long loop of runs holds one batch at most', () => {
    const path = join(dir, 'no-turns.jsonl');
    const sink = jsonlSink(path);
    // ~1 MiB of lines with no await in between: nothing async could have run.
    fill(sink, 12_000);
    const written = readFileSync(path, 'utf8');
    const lines = written.split('\n').filter((l) => l !== '');
    // All but the batch being filled are in the file already, each line whole.
    expect(written.endsWith('\n')).toBe(true);
    expect(lines.length).toBeGreaterThan(12_000 - (64 * 1024) / 80);
    expect(lines.map((l) => (JSON.parse(l) as TraceEvent).callId)).toEqual(
      Array.from({ length: lines.length }, (_, i) => `c${i}`),
    );
    return sink.close();
  });

  it('a write after close() is refused with a clear error the runner reports, and the file is unchanged', async () => {
    const path = join(dir, 'after-close.jsonl');
    const sink = jsonlSink(path);
    sink.write(event('c1'));
    await sink.close();
    expect(() => sink.write(event('c2'))).toThrow(/the JSONL sink is closed/);
    expect(linesOf(path)).toEqual([event('c1')]);
  });
});

describe('jsonlSink with append: false next to another writer of the same file', () => {
  it("keeps appending after the truncation, so it never writes over the other writer's lines", async () => {
    const path = join(dir, 'truncated.jsonl');
    writeFileSync(path, `${JSON.stringify(event('old'))}\n`);
    // e.g. a fresh trace per deploy, while a second runner (or process) appends to the same file.
    const fresh = jsonlSink(path, { append: false });
    const other = jsonlSink(path);
    fresh.write(event('fresh-1-with-a-longer-id'));
    await fresh.flush();
    other.write(event('other-1'));
    await other.flush();
    fresh.write(event('fresh-2'));
    await fresh.close();
    await other.close();
    expect(linesOf(path).map((e) => e.callId)).toEqual(['fresh-1-with-a-longer-id', 'other-1', 'fresh-2']);
  });
});

describe('a run traced to JSONL and read back by the review', () => {
  it('values JSON cannot hold, lone surrogates and a line past a batch all become lines the review parses', async () => {
    const path = join(dir, 'odd-values.jsonl');
    const sink = jsonlSink(path, { append: false });
    const errors: unknown[] = [];
    const cyclic: Record<string, unknown> = { n: 10n, text: 'a\uD800b\uDC00', big: 'y'.repeat(300_000) };
    cyclic.self = cyclic;
    let value = 0;
    const action = defineAction({
      name: 'odd',
      system: 'a test system',
      description: 'Returns values JSON cannot encode.',
      input: anyInput,
      target: () => 'odd:1',
      postcondition: 'value is 1',
      execute: async () => {
        value = 1;
        return cyclic;
      },
      observe: async () => ({ value, note: 'lone \uDFFF surrogate' }),
      expect: () => ({ value: 1 }),
      safeToRepeat: false,
    });
    const runner = createRunner({
      trace: { sinks: [sink], recordArguments: true, onSinkError: (e) => void errors.push(e) },
    });
    const done = await runner.run(action, { s: 'in\uD83Dput' }, { runId: 'run-\uDC00' });
    expect(done.status).toBe('verified');
    await sink.close();
    expect(errors).toEqual([]);
    const text = readFileSync(path, 'utf8');
    const events = linesOf(path);
    expect(events.map((e) => e.type)).toContain('completion');
    expect(events.every((e) => e.runId === 'run-\uDC00')).toBe(true);
    const read = parseReadbackTrace(text, path);
    expect(read.ok).toBe(true);
    if (read.ok) expect(read.value.calls).toHaveLength(1);
  });

  it('one event JSON cannot encode is refused alone; the events after it are still written', async () => {
    const path = join(dir, 'bad-event.jsonl');
    const sink = jsonlSink(path, { append: false });
    sink.write(event('c1'));
    const cyclic = { ...event('bad'), error: { name: 'E', message: 'm', n: 1n } } as unknown as TraceEvent;
    expect(() => sink.write(cyclic)).toThrow(/BigInt/);
    sink.write(event('c2'));
    await sink.close();
    expect(linesOf(path).map((e) => e.callId)).toEqual(['c1', 'c2']);
  });
});

describe('a process that ends right after its runs', () => {
  const run = promisify(execFile);
  let compiled: Promise<string> | undefined;
  afterAll(async () => {
    if (compiled) rmSync(await compiled, { recursive: true, force: true });
  });
  // The child runs the real sink and runner, transpiled from today's sources. `ending` is how it stops.
  async function endWith(ending: string): Promise<{ events: TraceEvent[]; code: number }> {
    compiled ??= compileSources(['src/index.ts', 'src/testing/index.ts'], 'jsonl-exit');
    const out = await compiled;
    const module = (p: string) => JSON.stringify(pathToFileURL(join(out, p)).href);
    const file = join(dir, `exit-${Math.random().toString(36).slice(2)}.jsonl`);
    const script = join(dir, `exit-${Math.random().toString(36).slice(2)}.mjs`);
    writeFileSync(
      script,
      `import { createRunner, jsonlSink } from ${module('src/index.js')};
import { createHelpdesk } from ${module('src/testing/index.js')};
const sink = jsonlSink(${JSON.stringify(file)});
const hd = createHelpdesk();
hd.tickets.seed([{ id: 'T-1', tenant: 'acme' }]);
const runner = createRunner({ clock: hd.clock, trace: { sinks: [sink] } });
await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, { runId: 'r', scope: { tenant: 'acme' } });
${ending}
`,
    );
    let code = 0;
    try {
      await run(process.execPath, [script], { timeout: 30_000 });
    } catch (error) {
      code = (error as { code: number }).code;
    }
    return { events: existsSync(file) ? linesOf(file) : [], code };
  }

  it('keeps every line when the event loop simply runs out, without close()', async () => {
    const { events, code } = await endWith('');
    expect(code).toBe(0);
    expect(events.at(-1)?.type).toBe('completion');
  }, 60_000);

  it('keeps every line when close() is awaited before process.exit()', async () => {
    const { events } = await endWith('await sink.close();\nprocess.exit(3);');
    expect(events.at(-1)?.type).toBe('completion');
  }, 60_000);

  it('keeps every line when process.exit() or an uncaught exception ends it without close()', async () => {
    // The last batch was not sent when the process began to exit: the exit listener writes it.
    for (const ending of ['process.exit(3);', "throw new Error('boom');"]) {
      const { events, code } = await endWith(ending);
      expect(code).not.toBe(0);
      expect(events.at(-1)?.type).toBe('completion');
      expect(events.every((e) => e.runId === 'r')).toBe(true);
    }
  }, 60_000);

  it('a process killed by a signal before its batch went out loses that batch, never part of a line', async () => {
    const { events, code } = await endWith("process.kill(process.pid, 'SIGKILL');");
    expect(code).not.toBe(0);
    expect(events).toEqual([]);
  }, 60_000);
});
