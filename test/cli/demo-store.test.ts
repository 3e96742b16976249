import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './support.js';

describe('the demo records its operations in SQLite', () => {
  it('ops list shows them, and reconcile --once settles the pending email', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'readback-demo-'));
    const store = join(dir, 'demo.db');

    const demo = await runCli(['demo', '--store', store]);
    expect(demo.code).toBe(0);
    expect(demo.stdout).toContain(`Operations recorded in ${store}`);
    expect(existsSync(`${store}.demo-mail.json`)).toBe(true);

    const listed = await runCli(['ops', 'list', '--store', store, '--json']);
    expect(listed.code).toBe(0);
    const records = JSON.parse(listed.stdout) as {
      id: string;
      status: string;
      action: string;
      target: string;
    }[];
    expect(records).toHaveLength(9);
    const pending = records.filter((r) => r.status === 'pending');
    expect(pending.map((r) => r.target)).toEqual(['email:cy@example.com']);

    // A second process: no --actions needed for the demo's own store.
    const reconciled = await runCli(['reconcile', '--once', '--store', store, '--json']);
    expect(reconciled.code).toBe(0);
    const report = JSON.parse(reconciled.stdout) as { claimed: number; byStatus: Record<string, number> };
    expect(report.claimed).toBe(1);
    expect(report.byStatus.verified).toBe(1);

    const shown = await runCli(['ops', 'show', pending[0]!.id, '--store', store, '--json']);
    const { record, events } = JSON.parse(shown.stdout) as {
      record: { status: string; lifecycle: string };
      events: { type: string }[];
    };
    expect(record).toMatchObject({ status: 'verified', lifecycle: 'settled' });
    expect(events.map((e) => e.type)).toContain('claimed');

    // Running the demo again adds a second set of operations instead of colliding with the first.
    expect((await runCli(['demo', '--store', store, '--json'])).code).toBe(0);
    const again = JSON.parse(
      (await runCli(['ops', 'list', '--store', store, '--json', '--limit', '100'])).stdout,
    );
    expect(again).toHaveLength(18);
  });

  it('reconcile on a store the demo did not write still needs --actions', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'readback-demo-'));
    await runCli(['demo', '--store', join(dir, 'demo.db')]);
    const other = join(dir, 'other.db');
    const { code, stderr } = await runCli(['reconcile', '--once', '--store', other]);
    expect(code).toBe(2);
    expect(stderr).toContain('needs --actions');
  });
});
