import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openStore } from '../../src/cli/store.js';
import type { Completion } from '../../src/contract/types.js';
import { createRunner } from '../../src/runner/runner.js';
import { openDatabaseFile } from '../../src/sqlite/driver.js';
import { createHelpdesk } from '../../src/testing/helpdesk.js';
import { HAS_SQLITE, storesByPath } from './stand-ins.js';
import { resolveArgv, runCli } from './support.js';

// The SQLite store is built in parallel; until it exists, stand-ins take its place (see stand-ins.ts).
let closes = 0;
const stores = storesByPath(() => closes++);

vi.mock('../../src/cli/store.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/cli/store.js')>();
  return { ...real, openStore: vi.fn(real.openStore) };
});

let dir: string;
let db: string;
let ids: Record<'ticket' | 'pendingEmail' | 'droppedEmail' | 'page', Completion>;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'readback-ops-'));
  db = join(dir, 'ops.db');
  closes = 0;
  stores.route();
  const store = await stores.create(db);
  const hd = createHelpdesk();
  hd.tickets.seed([{ id: 'T-1', tenant: 'acme' }]);
  let seq = 0;
  const runner = createRunner({
    store,
    clock: hd.clock,
    random: () => 0.5,
    newId: () => `op-${String(++seq).padStart(2, '0')}`,
  });
  const ctx = { runId: 'cli-test', scope: { tenant: 'acme' }, actor: 'agent' };
  const mail = { subject: 'Hi', body: 'Hello.' };
  const ticket = await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, ctx);
  const pendingEmail = await runner.run(
    hd.actions.sendEmail,
    { to: 'cy@example.com', ...mail },
    { ...ctx, wait: false },
  );
  hd.mail.faults.nextOutcome = 'dropped';
  const droppedEmail = await runner.run(hd.actions.sendEmail, { to: 'bo@example.com', ...mail }, ctx);
  const page = await runner.run(hd.actions.pageOncall, { message: 'wake up' }, ctx);
  ids = { ticket, pendingEmail, droppedEmail, page };
  if (HAS_SQLITE) await store.close();
});

afterEach(() => {
  stores.clear();
  rmSync(dir, { recursive: true, force: true });
});

describe('readback ops list', () => {
  it('seeds the statuses the tests rely on', () => {
    expect(Object.values(ids).map((c) => c.status)).toEqual(['verified', 'pending', 'failed', 'unknown']);
  });

  it('prints a table of every operation', async () => {
    const { code, stdout, stderr } = await runCli(['ops', 'list', '--store', db]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const header = stdout.split('\n').find((line) => line.startsWith('│ id '));
    expect(header?.split('│').map((c) => c.trim())).toEqual([
      '',
      'id',
      'action',
      'target',
      'lifecycle',
      'status',
      'attempt',
      'updated',
      'next poll',
      '',
    ]);
    for (const c of Object.values(ids)) expect(stdout).toContain(c.operationId);
    expect(stdout).toContain('email:cy@example.com');
    expect(stdout).toContain('4 operations');
    if (!HAS_SQLITE) expect(closes).toBe(1);
  });

  it('filters by status and action, limits, and prints JSON', async () => {
    const pending = await runCli(['ops', 'list', '--store', db, '--status', 'pending', '--json']);
    expect(pending.code).toBe(0);
    const records = JSON.parse(pending.stdout) as { id: string; status: string; lifecycle: string }[];
    expect(records.map((r) => r.id)).toEqual([ids.pendingEmail.operationId]);
    expect(records[0]).toMatchObject({ status: 'pending', lifecycle: 'accepted' });

    const emails = JSON.parse(
      (await runCli(['ops', 'list', '--store', db, '--action', 'send_email', '--json'])).stdout,
    );
    expect(emails.map((r: { id: string }) => r.id).sort()).toEqual(
      [ids.pendingEmail.operationId, ids.droppedEmail.operationId].sort(),
    );

    const limited = await runCli(['ops', 'list', '--store', db, '--limit', '1']);
    expect(limited.code).toBe(0);
    expect(limited.stdout).toContain('1 operation (of 4; raise --limit to see more)');

    const none = await runCli(['ops', 'list', '--store', db, '--status', 'partial']);
    expect(none.stdout).toBe('no operations match\n');
  });

  it('--shadow lists only shadow disagreements: none among normal runs, even the failed one', async () => {
    const { code, stdout } = await runCli(['ops', 'list', '--store', db, '--shadow']);
    expect(code).toBe(0);
    expect(ids.droppedEmail.status).toBe('failed');
    expect(stdout).toBe('no shadow disagreements\n');
    const json = await runCli(['ops', 'list', '--store', db, '--shadow', '--json']);
    expect(JSON.parse(json.stdout)).toEqual([]);
    const misplaced = await runCli(['ops', 'show', ids.ticket.operationId, '--store', db, '--shadow']);
    expect(misplaced.code).toBe(2);
    expect(misplaced.stderr).toContain("option '--shadow' does not apply to 'readback ops show'");
  });

  it('rejects a bad --status, a non-numeric --limit and options of other subcommands with exit 2', async () => {
    const status = await runCli(['ops', 'list', '--store', db, '--status', 'done']);
    expect(status.code).toBe(2);
    expect(status.stderr).toContain(
      "option '--status' must be one of verified, pending, failed, partial, no_op, unknown; got 'done'",
    );
    for (const bad of ['ten', '0', '-1', '2.5']) {
      const limit = await runCli(['ops', 'list', '--store', db, '--limit', bad]);
      expect(limit.code).toBe(2);
      expect(limit.stderr).toContain("option '--limit' needs a whole number ≥ 1");
    }
    const note = await runCli(['ops', 'list', '--store', db, '--note', 'x']);
    expect(note.code).toBe(2);
    expect(note.stderr).toContain("option '--note' does not apply to 'readback ops list'");
  });
});

describe('readback ops show', () => {
  it('prints the record, the completion with its evidence, and the timeline', async () => {
    const id = ids.droppedEmail.operationId;
    const { code, stdout, stderr } = await runCli(['ops', 'show', id, '--store', db]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain(`operation ${id}`);
    expect(stdout).toMatch(/completion\n {2}status +failed\n {2}errorCode +provider_failed/);
    expect(stdout).toMatch(/reason +the provider reports the work failed/);
    expect(stdout).toMatch(/timeline \(\d+ events\)/);
    expect(stdout).toMatch(/│ 1 +│ 2026-01-01T00:00:00\.000Z │ reserved/);
    expect(stdout).toContain('∅ → requested');
  });

  it('shows the evidence a verified completion was decided on', async () => {
    const { code, stdout } = await runCli(['ops', 'show', ids.ticket.operationId, '--store', db]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/status +verified/);
    expect(stdout).toMatch(/evidence +\{.*"status":"resolved"/);
  });

  it('--json prints the record and its events', async () => {
    const id = ids.ticket.operationId;
    const { code, stdout } = await runCli(['ops', 'show', id, '--store', db, '--json']);
    expect(code).toBe(0);
    const doc = JSON.parse(stdout);
    expect(doc.record).toMatchObject({ id, status: 'verified', lifecycle: 'settled' });
    expect(doc.events[0]).toMatchObject({ seq: 1, type: 'reserved', to: 'requested' });
    expect(doc.events.at(-1)).toMatchObject({ to: 'settled', status: 'verified' });
  });

  it('reports an unknown id with exit 1', async () => {
    const { code, stderr, stdout } = await runCli(['ops', 'show', 'op-nope', '--store', db]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe('readback: no operation op-nope\n');
  });

  it('needs an id', async () => {
    const { code, stderr } = await runCli(['ops', 'show', '--store', db]);
    expect(code).toBe(2);
    expect(stderr).toContain("'readback ops show' needs an operation id");
  });
});

describe('readback ops resolve', () => {
  it('settles an open operation as an operator decision and keeps the evidence trail', async () => {
    const id = ids.pendingEmail.operationId;
    const before = JSON.parse((await runCli(['ops', 'show', id, '--store', db, '--json'])).stdout);
    expect(before.record.lifecycle).toBe('accepted');

    const resolved = await runCli([
      'ops',
      'resolve',
      id,
      '--store',
      db,
      '--status',
      'verified',
      '--note',
      'customer confirmed receipt by phone',
      '--by',
      'dana',
    ]);
    expect(resolved.stderr).toBe('');
    expect(resolved.code).toBe(0);
    expect(resolved.stdout).toContain(
      `resolved ${id} as verified (recorded as an operator decision by dana)`,
    );
    expect(resolved.stdout).toMatch(/errorCode +operator_resolved/);
    expect(resolved.stdout).toContain('resolved as verified by dana: customer confirmed receipt by phone');

    const after = JSON.parse((await runCli(['ops', 'show', id, '--store', db, '--json'])).stdout);
    expect(after.record).toMatchObject({ lifecycle: 'settled', status: 'verified' });
    expect(after.record.completion).toMatchObject({ status: 'verified', errorCode: 'operator_resolved' });
    // Every earlier event is still there, unchanged, and the decision is appended after them.
    expect(after.events.slice(0, before.events.length)).toEqual(before.events);
    expect(after.events).toHaveLength(before.events.length + 1);
    expect(after.events.at(-1)).toMatchObject({
      type: 'operator_resolved',
      from: 'accepted',
      to: 'settled',
      status: 'verified',
      actor: 'dana',
      detail: { by: 'dana', note: 'customer confirmed receipt by phone', previousStatus: 'pending' },
    });
    const text = await runCli(['ops', 'show', id, '--store', db]);
    expect(text.stdout).toContain('operator_resolved');
    expect(text.stdout).toContain('reserved');
  });

  it('refuses an operation that is already settled, changing nothing', async () => {
    const id = ids.droppedEmail.operationId;
    const before = (await runCli(['ops', 'show', id, '--store', db, '--json'])).stdout;
    const { code, stderr } = await runCli([
      'ops',
      'resolve',
      id,
      '--store',
      db,
      '--status',
      'verified',
      '--note',
      'looks fine',
      '--by',
      'dana',
    ]);
    expect(code).toBe(1);
    expect(stderr).toContain(`operation ${id} already settled as failed; an operator cannot overwrite it`);
    expect(stderr).not.toContain('unexpected error');
    expect((await runCli(['ops', 'show', id, '--store', db, '--json'])).stdout).toBe(before);
  });

  it('needs --status verified|failed, --note and --by (exit 2)', async () => {
    const id = ids.pendingEmail.operationId;
    const base = ['ops', 'resolve', id, '--store', db];
    const cases: [string[], string][] = [
      [['--note', 'n', '--by', 'b'], 'needs --status verified|failed'],
      [
        ['--status', 'pending', '--note', 'n', '--by', 'b'],
        "must be verified or failed for resolve; got 'pending'",
      ],
      [['--status', 'failed', '--by', 'b'], 'needs --note'],
      [['--status', 'failed', '--note', '  ', '--by', 'b'], 'needs --note'],
      [['--status', 'failed', '--note', 'n'], 'needs --by NAME'],
    ];
    for (const [extra, message] of cases) {
      const { code, stderr } = await runCli([...base, ...extra]);
      expect(code).toBe(2);
      expect(stderr).toContain(message);
    }
    const still = JSON.parse((await runCli(['ops', 'show', id, '--store', db, '--json'])).stdout);
    expect(still.record.lifecycle).toBe('accepted');
  });

  it('reports a store that refuses the write in one line, without a stack, leaving the operation open', async () => {
    const id = ids.pendingEmail.operationId;
    const real = vi.mocked(openStore).getMockImplementation()!;
    vi.mocked(openStore).mockImplementationOnce(async (spec, options) => {
      const store = await real(spec, options);
      // What better-sqlite3 throws for a file the user may read but not write.
      const transition = async () => {
        throw new Error('attempt to write a readonly database');
      };
      return { ...store, transition };
    });
    const args = ['--status', 'failed', '--note', 'bounced', '--by', 'dana'];
    const { code, stdout, stderr } = await runCli(['ops', 'resolve', id, '--store', db, ...args]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      `readback: store ${db} failed during 'readback ops resolve': attempt to write a readonly database\n`,
    );
    const still = JSON.parse((await runCli(['ops', 'show', id, '--store', db, '--json'])).stdout);
    expect(still.record.lifecycle).toBe('accepted');
  });

  it('reports an unknown id with exit 1', async () => {
    const { code, stderr } = await runCli(resolveArgv('op-nope', db, 'failed', 'n', 'b'));
    expect(code).toBe(1);
    expect(stderr).toBe('readback: no operation op-nope\n');
  });
});

describe('readback ops: bad input', () => {
  it('rejects a missing or unknown subcommand', async () => {
    const missing = await runCli(['ops']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("'readback ops' needs a subcommand: list, show, resolve or prune");
    const unknown = await runCli(['ops', 'frob', '--store', db]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown subcommand 'frob' for 'readback ops'");
    const stray = await runCli(['ops', 'list', 'extra', '--store', db]);
    expect(stray.code).toBe(2);
  });

  it('names a missing store file and does not create it', async () => {
    const missing = join(dir, 'nope.db');
    const { code, stderr } = await runCli(['ops', 'list', '--store', missing]);
    expect(code).toBe(2);
    expect(stderr).toContain(`no store at ${missing} (file not found)`);
    expect(existsSync(missing)).toBe(false);
  });

  it('refuses an empty file and a SQLite database without readback tables, leaving both as they were', async () => {
    const empty = join(dir, 'empty.db');
    writeFileSync(empty, '');
    const foreign = join(dir, 'app.db');
    const handle = await openDatabaseFile(foreign);
    handle.exec("CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('ana')");
    handle.close();
    const bytes = readFileSync(foreign);
    for (const [path, what] of [
      [empty, 'an empty file'],
      [foreign, "a SQLite database without readback's tables"],
    ] as const) {
      for (const argv of [
        ['ops', 'list', '--store', path],
        ['ops', 'show', 'op-01', '--store', path],
        ['ops', 'resolve', 'op-01', '--store', path, '--status', 'failed', '--note', 'n', '--by', 'b'],
      ]) {
        const { code, stdout, stderr } = await runCli(argv);
        expect(code).toBe(2);
        expect(stdout).toBe('');
        expect(stderr).toContain(`readback: store ${path} is ${what}, not a readback store`);
      }
    }
    expect(readFileSync(empty).length).toBe(0);
    expect(readFileSync(foreign).equals(bytes)).toBe(true);
  });

  it('shows help for ops', async () => {
    const { code, stdout } = await runCli(['ops', '--help']);
    expect(code).toBe(0);
    expect(stdout).toContain('readback ops resolve <id> --status verified|failed');
    expect(stdout).toContain('[--shadow]');
    const general = await runCli(['--help']);
    expect(general.stdout).toMatch(/\n {2}ops +list, inspect/);
    expect(general.stdout).toMatch(/\n {2}reconcile +claim due/);
  });
});
