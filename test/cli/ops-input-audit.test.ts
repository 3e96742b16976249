import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadBetterSqlite3 } from '../../src/sqlite/driver.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { resolveArgv, runCli } from './support.js';

let dir: string;
let db: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'readback-ops-input-'));
  db = join(dir, 'ops.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function seedOpen(id: string): Promise<void> {
  const store = await sqliteStore({ path: db });
  await store.reserve(
    {
      id,
      action: 'update_ticket',
      target: `ticket:${id}`,
      scope: {},
      fingerprint: 'f',
      idempotencyKey: `k-${id}`,
      runId: 'r',
      actor: null,
      input: { id },
      requestedAt: 1,
    },
    { type: 'reserved', at: 1, from: null, to: 'requested', status: null, actor: null, attempt: 0 },
  );
  await store.close();
}

async function lifecycle(id: string): Promise<string> {
  return JSON.parse((await runCli(['ops', 'show', id, '--store', db, '--json'])).stdout).record.lifecycle;
}

describe('ops resolve: --by and --note must show something', () => {
  it('refuses invisible text (zero-width, format characters, variation selectors) as missing, exit 2', async () => {
    await seedOpen('op-1');
    for (const invisible of [
      '\u200b',
      ' \u200d\u2060 ',
      '\ufe0f',
      '\u00ad\ufeff',
      '\u3164',
      '\u034f\u{e0100}',
    ]) {
      const noNote = await runCli(resolveArgv('op-1', db, 'verified', invisible, 'maria'));
      expect(noNote.code).toBe(2);
      expect(noNote.stderr).toContain('needs --note "...": an operator decision must say why');
      expect(noNote.stderr).toContain('holds only spaces or invisible characters');
      const noBy = await runCli(resolveArgv('op-1', db, 'verified', 'checked the ledger', invisible));
      expect(noBy.code).toBe(2);
      expect(noBy.stderr).toContain('needs --by NAME: an operator decision must say who');
    }
    expect(await lifecycle('op-1')).toBe('requested');
  });

  it('refuses bidirectional controls in --by (the name shown would not be the name stored), exit 2', async () => {
    await seedOpen('op-1');
    for (const c of ['\u202e', '\u202a', '\u2066', '\u2069', '\u200e', '\u200f', '\u061c']) {
      const r = await runCli(resolveArgv('op-1', db, 'failed', 'n', `maria${c}toor`));
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("option '--by' must not contain bidirectional control characters");
    }
    expect(await lifecycle('op-1')).toBe('requested');
    // A note may hold right-to-left text; a visible name with a joiner inside it (an emoji) is a name.
    const ok = await runCli(
      resolveArgv('op-1', db, 'failed', 'the provider said \u202bلا\u202c', 'ma\u200dria'),
    );
    expect(ok.code).toBe(0);
  });
});

describe('ops: a damaged row', () => {
  it('ops list names the operation and the column whose JSON is damaged, in one line (exit 1)', async () => {
    await seedOpen('op-ok');
    await seedOpen('op-bad');
    const raw = new (await loadBetterSqlite3())(db);
    raw.prepare("UPDATE readback_operations SET completion = '{bad' WHERE id = 'op-bad'").run();
    raw.close();
    const r = await runCli(['ops', 'list', '--store', db]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^readback: store .* failed during 'readback ops list': operation op-bad: column completion does not hold valid JSON \(.+\)\n$/,
    );
    const json = await runCli(['ops', 'list', '--store', db, '--json']);
    expect(JSON.parse(json.stdout).error).toMatchObject({
      kind: 'failed',
      message: expect.stringContaining('operation op-bad: column completion'),
    });
  });
});

describe('ops: an empty id, help and version under --json', () => {
  it('an empty id is a usage error (exit 2), not "no operation "', async () => {
    await seedOpen('op-1');
    for (const argv of [['ops', 'show', '', '--store', db], resolveArgv('', db)]) {
      const r = await runCli(argv);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('the operation id is empty');
    }
    expect(await lifecycle('op-1')).toBe('requested');
  });

  it("'readback help help' shows the general help", async () => {
    const r = await runCli(['help', 'help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('usage: readback <command> [options]');
  });

  it('--help and --version print one JSON document under --json', async () => {
    const version = await runCli(['--version', '--json']);
    expect(version.code).toBe(0);
    expect(JSON.parse(version.stdout)).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    for (const argv of [
      ['--help', '--json'],
      ['ops', '--help', '--json'],
      ['help', 'ops', '--json'],
    ]) {
      const r = await runCli(argv);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout).help).toContain('usage: readback');
    }
    // Without --json, plain text as before.
    expect((await runCli(['--version'])).stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
  });
});
