import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readIncident } from '../../src/review/adapters.js';
import { compileSources } from '../support/compile.mjs';

// Separate processes sharing one trace file, and a process killed in the middle of writing: the children run
// the real sink and runner, transpiled from today's sources.
const run = promisify(execFile);
let out = '';
const dir = mkdtempSync(join(tmpdir(), 'readback-jsonl-processes-'));
beforeAll(async () => {
  out = await compileSources(['src/index.ts', 'src/testing/index.ts'], 'jsonl-processes');
}, 60_000);
afterAll(() => {
  rmSync(out, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

const module = (path: string) => JSON.stringify(pathToFileURL(join(out, path)).href);

// Writes `count` events of 200 B, 20 KiB and 200 KiB (past a whole 64 KiB batch) in turn, then closes.
function writerScript(): string {
  const path = join(dir, 'writer.mjs');
  writeFileSync(
    path,
    `import { jsonlSink } from ${module('src/index.js')};
const [file, worker, count, startAt] = process.argv.slice(2);
const sizes = [200, 20_000, 200_000];
const sink = jsonlSink(file);
while (Date.now() < Number(startAt));
for (let i = 1; i <= Number(count); i++) {
  const pad = worker.repeat(sizes[i % 3]);
  sink.write({ v: 1, type: 'run.error', seq: i, at: '', runId: worker, callId: worker, action: 'a',
    error: { name: 'E', message: pad } });
  if (i % 7 === 0) await new Promise((r) => setTimeout(r, 1));
}
await sink.close();
`,
  );
  return path;
}

describe('two processes appending to one JSONL trace', () => {
  it('never interleave bytes inside a line, whole batches or lines past a batch', async () => {
    const file = join(dir, 'shared.jsonl');
    const script = writerScript();
    const count = 150;
    const startAt = Date.now() + 1_000;
    await Promise.all(
      ['x', 'y'].map((w) =>
        run(process.execPath, [script, file, w, String(count), String(startAt)], { timeout: 60_000 }),
      ),
    );
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines.pop()).toBe('');
    const events = lines.map(
      (l) => JSON.parse(l) as { runId: string; seq: number; error: { message: string } },
    );
    for (const w of ['x', 'y']) {
      const mine = events.filter((e) => e.runId === w);
      expect(mine.map((e) => e.seq)).toEqual(Array.from({ length: count }, (_, i) => i + 1));
      expect(mine.every((e) => e.error.message === w.repeat(e.error.message.length))).toBe(true);
    }
    // The writes did overlap in time: each writer's lines are not all in one block.
    const switches = events.filter((e, i) => i > 0 && e.runId !== events[i - 1]!.runId).length;
    expect(switches).toBeGreaterThan(1);
  }, 60_000);
});

describe('a process killed (SIGKILL) while tracing', () => {
  it('leaves whole lines the review reads, and a restart appends after any cut line', async () => {
    const file = join(dir, 'killed.jsonl');
    const script = join(dir, 'looper.mjs');
    writeFileSync(
      script,
      `import { createRunner, jsonlSink } from ${module('src/index.js')};
import { createHelpdesk } from ${module('src/testing/index.js')};
const [file, runId, calls] = process.argv.slice(2);
const sink = jsonlSink(file);
const hd = createHelpdesk();
const runner = createRunner({ clock: hd.clock, trace: { sinks: [sink] } });
for (let i = 0; i < Number(calls); i++) {
  hd.tickets.seed([{ id: 'T-' + i, tenant: 'acme' }]);
  await runner.run(hd.actions.updateTicket, { id: 'T-' + i, status: 'resolved' },
    { runId, scope: { tenant: 'acme' } });
  if (i % 50 === 0) await new Promise((r) => setTimeout(r, 1));
}
await sink.close();
`,
    );
    const child = spawn(process.execPath, [script, file, 'r-killed', '1000000'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const deadline = Date.now() + 30_000;
    while ((statSync(file, { throwIfNoEntry: false })?.size ?? 0) < 300_000 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 5));
    }
    child.kill('SIGKILL');
    await exited;
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n');
    const last = lines.pop()!;
    for (const line of lines) JSON.parse(line);
    const read = readIncident(text, file);
    expect(read.ok).toBe(true);
    if (read.ok && last !== '') expect(read.value.source).toContain(`line ${lines.length + 1} cut off`);
    // The restart's events are whole lines after whatever the kill left.
    await run(process.execPath, [script, file, 'r-restart', '3'], { timeout: 30_000 });
    const after = readFileSync(file, 'utf8')
      .split('\n')
      .slice(lines.length + 1);
    expect(after.pop()).toBe('');
    const restarted = after
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { runId: string; type: string });
    expect(restarted.every((e) => e.runId === 'r-restart')).toBe(true);
    expect(restarted.filter((e) => e.type === 'completion')).toHaveLength(3);
  }, 60_000);
});
