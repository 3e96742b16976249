import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../cli/support.js';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3') as new (
  path: string,
) => { exec(sql: string): void; prepare(sql: string): { get(): unknown }; close(): void };

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'readback-review-store-failure-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('review --store when the store fails under it', () => {
  it('names the store and the reason in one line (exit 1), as ops does, instead of a stack', async () => {
    const db = join(dir, 'demo.db');
    expect((await runCli(['demo', '--store', db, '--json'])).code).toBe(0);
    // A damaged store: the operations are there, their events are not.
    const raw = new Database(db);
    const { run_id: runId } = raw.prepare('SELECT run_id FROM readback_operations LIMIT 1').get() as {
      run_id: string;
    };
    raw.exec('DROP TABLE readback_events');
    raw.close();

    const text = await runCli(['review', '--store', db, '--run', runId]);
    expect(text.code).toBe(1);
    expect(text.stdout).toBe('');
    expect(text.stderr).toBe(
      `readback: store ${db} failed during 'readback review': no such table: readback_events\n`,
    );

    const json = await runCli(['review', '--store', db, '--run', runId, '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toEqual({
      error: {
        kind: 'failed',
        message: `store ${db} failed during 'readback review': no such table: readback_events`,
        exitCode: 1,
      },
    });
  });
});
