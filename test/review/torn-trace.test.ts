import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli/support.js';

const dir = mkdtempSync(join(tmpdir(), 'readback-review-torn-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const fixture = (name: string) => readFileSync(join('test/fixtures/review', name), 'utf8');

describe('review of a trace whose writer crashed mid-line', () => {
  it('reads the whole lines before the cut-off one and says which line it skipped', async () => {
    // The incident's own trace: the final answer, then the start of a record the crash cut off.
    const path = join(dir, 'crashed.jsonl');
    writeFileSync(
      path,
      `${fixture('accepted-unfinished.jsonl').trimEnd()}\n{"kind":"tool_call","id":"c2","na`,
    );
    const out = await runCli(['review', path, '--json']);
    expect(out.code).toBe(3);
    const report = JSON.parse(out.stdout);
    expect(report.source).toContain('line 6 cut off mid-write: skipped');
    expect(report.calls).toBe(1);
    expect(report.findings[0].class).toBe('accepted_unfinished');
  });

  it('still refuses a broken line in the middle, or a broken last line that was written whole', async () => {
    const lines = fixture('accepted-unfinished.jsonl').trimEnd().split('\n');
    const middle = join(dir, 'middle.jsonl');
    writeFileSync(middle, [lines[0], '{"kind":"tool_call","id', ...lines.slice(1)].join('\n'));
    expect((await runCli(['review', middle])).code).toBe(1);
    const whole = join(dir, 'whole.jsonl');
    writeFileSync(whole, `${lines.join('\n')}\n{"kind":"tool_call","id\n`);
    expect((await runCli(['review', whole])).code).toBe(1);
  });
});

describe('review of a path that names nothing', () => {
  it('is a usage error (exit 2), as a missing store, contract or module is', async () => {
    const out = await runCli(['review', join(dir, 'no-such.jsonl')]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('trace not found');
  });
});
