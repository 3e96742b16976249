import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from './support.js';

let dir: string;
let store: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'readback-demo-rerun-'));
  store = join(dir, 'demo.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function records(): Promise<{ id: string; status: string; lifecycle: string; target: string }[]> {
  return JSON.parse((await runCli(['ops', 'list', '--store', store, '--json'])).stdout);
}

describe('running the demo more than once', () => {
  // The second run overwrote the saved mail queue, so the first run's pending email could no longer be found
  // by reconcile and ended `unknown` (timed out) although the provider had delivered it.
  it('keeps every run pending email findable: reconcile --once verifies both', async () => {
    expect((await runCli(['demo', '--store', store, '--json'])).code).toBe(0);
    await new Promise((r) => setTimeout(r, 5)); // distinct run stamps
    expect((await runCli(['demo', '--store', store, '--json'])).code).toBe(0);
    const pending = (await records()).filter((r) => r.status === 'pending');
    expect(pending).toHaveLength(2);

    const reconciled = await runCli(['reconcile', '--once', '--store', store, '--json']);
    expect(reconciled.code).toBe(0);
    expect(JSON.parse(reconciled.stdout).byStatus).toMatchObject({ verified: 2 });
    const after = (await records()).filter((r) => pending.some((p) => p.id === r.id));
    expect(after.map((r) => [r.status, r.lifecycle])).toEqual([
      ['verified', 'settled'],
      ['verified', 'settled'],
    ]);
    // The saved queue holds both runs' emails, each once.
    const saved = JSON.parse(readFileSync(`${store}.demo-mail.json`, 'utf8')) as {
      messages: { messageId: string }[];
    };
    expect(saved.messages).toHaveLength(6);
    expect(new Set(saved.messages.map((m) => m.messageId)).size).toBe(6);
  });

  it('starts over from a damaged saved queue instead of failing', async () => {
    writeFileSync(`${store}.demo-mail.json`, '{"version":1,"messa');
    expect((await runCli(['demo', '--store', store, '--json'])).code).toBe(0);
    const reconciled = await runCli(['reconcile', '--once', '--store', store, '--json']);
    expect(JSON.parse(reconciled.stdout).byStatus).toMatchObject({ verified: 1 });
  });
});

describe('where the demo cannot write', () => {
  // `.readback` existing as a file gave "path: cannot open …/.readback/demo.db: unable to open database file".
  it('names a parent that is a file, exit 1, and leaves that file alone', async () => {
    const blocker = join(dir, '.readback');
    writeFileSync(blocker, 'notes');
    const r = await runCli(['demo', '--store', join(blocker, 'demo.db')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${blocker} is a file, not a directory`);
    expect(r.stdout).toBe('');
    expect(readFileSync(blocker, 'utf8')).toBe('notes');
  });
});
