// The CLI against a Postgres store: `--store postgres://…?schema=…` for `ops` and `reconcile`, with a
// store filled by a real runner. Same rule as test/postgres: fails under CI=true when Postgres is
// unreachable, skips locally (point it elsewhere with READBACK_PG_URL).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parsePostgresSpec, redact } from '../../src/cli/store.js';
import type { Completion } from '../../src/contract/types.js';
import { postgresStore } from '../../src/postgres/index.js';
import { createRunner } from '../../src/runner/runner.js';
import { createHelpdesk, type Helpdesk } from '../../src/testing/helpdesk.js';
import { dropSchemas, PG_URL, pgSuite, storeUrl } from '../postgres/support.js';
import { runCli } from './support.js';

describe('postgres store specs', () => {
  it('takes ?schema= out of the URL and passes every other parameter on', () => {
    expect(parsePostgresSpec('postgres://u:p@h:5432/db?sslmode=disable&schema=ops_a')).toEqual({
      connectionString: 'postgres://u:p@h:5432/db?sslmode=disable',
      schema: 'ops_a',
    });
    expect(parsePostgresSpec('postgresql://h/db?schema=x')).toEqual({
      connectionString: 'postgresql://h/db',
      schema: 'x',
    });
    expect(parsePostgresSpec('postgres://h/db')).toEqual({
      connectionString: 'postgres://h/db',
      schema: undefined,
    });
    expect(parsePostgresSpec('postgres://h/db?application_name=rb')).toEqual({
      connectionString: 'postgres://h/db?application_name=rb',
      schema: undefined,
    });
    expect(redact('postgres://user:s3cret@h/db')).toBe('postgres://user:***@h/db');
    expect(redact('postgres://user@h/db')).toBe('postgres://user@h/db');
  });

  it('refuses a bad or repeated schema as a usage error, before connecting', async () => {
    const bad = await runCli(['ops', 'list', '--store', 'postgres://nowhere.invalid/db?schema=Ops-1']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("schema 'Ops-1' must be a lower-case SQL identifier");
    const twice = await runCli([
      'ops',
      'show',
      'op-1',
      '--store',
      'postgresql://u:pw@nowhere.invalid/db?schema=a&schema=b',
    ]);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain('names more than one schema');
    expect(twice.stderr).not.toContain('pw@');
  });
});

const { available, schemas, tempSchema } = await pgSuite();

// The actions module the CLI loads for `reconcile`: the test's own helpdesk fakes, handed over through a
// global, because the CLI runs in this process and must read the same mail provider the seeding run wrote to.
const HELPDESK_GLOBAL = '__readbackPgCliHelpdesk';
const ACTIONS_MODULE = `export const actions = globalThis.${HELPDESK_GLOBAL}.actions;\n`;

describe.skipIf(!available)('readback ops and reconcile with --store postgres://', () => {
  let schema: string;
  let url: string;
  let dir: string;
  let modulePath: string;
  let hd: Helpdesk;
  let seeded: Record<'ticket' | 'emailA' | 'emailB', Completion>;
  let db: pg.Client;

  beforeEach(async () => {
    schema = tempSchema();
    url = storeUrl(schema);
    dir = mkdtempSync(join(tmpdir(), 'readback-cli-pg-'));
    modulePath = join(dir, 'actions.mjs');
    writeFileSync(modulePath, ACTIONS_MODULE);
    hd = createHelpdesk();
    (globalThis as Record<string, unknown>)[HELPDESK_GLOBAL] = hd;
    hd.tickets.seed([{ id: 'T-1', tenant: 'acme' }]);

    const store = await postgresStore({ connectionString: PG_URL, schema });
    // The helpdesk clock starts in the past, so the pending emails' next polls are due at once for the
    // CLI's reconciler, which runs on the wall clock.
    const runner = createRunner({ store, clock: hd.clock, random: () => 0.5 });
    const ctx = { runId: 'cli-pg', scope: { tenant: 'acme' }, actor: 'agent' };
    const mail = { subject: 'Hi', body: 'Hello.' };
    seeded = {
      ticket: await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, ctx),
      emailA: await runner.run(
        hd.actions.sendEmail,
        { to: 'a@example.com', ...mail },
        { ...ctx, wait: false },
      ),
      emailB: await runner.run(
        hd.actions.sendEmail,
        { to: 'b@example.com', ...mail },
        { ...ctx, wait: false },
      ),
    };
    await store.close();
    db = new pg.Client({ connectionString: PG_URL });
    await db.connect();
  });

  afterEach(async () => {
    delete (globalThis as Record<string, unknown>)[HELPDESK_GLOBAL];
    rmSync(dir, { recursive: true, force: true });
    await db.end();
    await dropSchemas([schema]);
    schemas.delete(schema);
  });

  const row = async (id: string) => {
    const { rows } = await db.query(
      `SELECT lifecycle, status, completion, lease_owner FROM "${schema}".operations WHERE id = $1`,
      [id],
    );
    return rows[0] as { lifecycle: string; status: string; completion: unknown; lease_owner: string | null };
  };

  it('lists, shows, resolves and reconciles operations in the schema the URL names', async () => {
    expect(Object.values(seeded).map((c) => c.status)).toEqual(['verified', 'pending', 'pending']);
    const { emailA, emailB, ticket } = seeded;

    // ops list --json: every operation the runner wrote, and only those (the schema is this test's own).
    const list = await runCli(['ops', 'list', '--store', url, '--json']);
    expect(list.stderr).toBe('');
    expect(list.code).toBe(0);
    const records = JSON.parse(list.stdout) as { id: string; status: string; lifecycle: string }[];
    expect(records.map((r) => r.id).sort()).toEqual(
      [ticket, emailA, emailB].map((c) => c.operationId).sort(),
    );
    const pending = JSON.parse(
      (await runCli(['ops', 'list', '--store', url, '--status', 'pending', '--json'])).stdout,
    );
    expect(pending.map((r: { id: string }) => r.id).sort()).toEqual(
      [emailA.operationId, emailB.operationId].sort(),
    );

    // ops show: the record and its timeline.
    const show = await runCli(['ops', 'show', emailA.operationId, '--store', url, '--json']);
    expect(show.code).toBe(0);
    const shown = JSON.parse(show.stdout);
    expect(shown.record).toMatchObject({ id: emailA.operationId, lifecycle: 'accepted', status: 'pending' });
    expect(shown.events.map((e: { type: string }) => e.type)).toContain('reserved');
    const text = await runCli(['ops', 'show', emailA.operationId, '--store', url]);
    expect(text.stdout).toContain(`operation ${emailA.operationId}`);

    // ops resolve: an operator decision, written to the database.
    const resolved = await runCli([
      'ops',
      'resolve',
      emailB.operationId,
      '--store',
      url,
      '--status',
      'failed',
      '--note',
      'customer says it never arrived',
      '--by',
      'dana',
    ]);
    expect(resolved.stderr).toBe('');
    expect(resolved.code).toBe(0);
    expect(resolved.stdout).toContain(`resolved ${emailB.operationId} as failed`);
    expect(await row(emailB.operationId)).toMatchObject({
      lifecycle: 'settled',
      status: 'failed',
      completion: expect.objectContaining({ errorCode: 'operator_resolved' }),
    });
    const { rows: events } = await db.query(
      `SELECT type, actor FROM "${schema}".events WHERE operation_id = $1 ORDER BY seq`,
      [emailB.operationId],
    );
    expect(events.at(-1)).toEqual({ type: 'operator_resolved', actor: 'dana' });

    // reconcile --once: the provider delivers email A; the reconciler reads that back and settles it.
    hd.clock.advance(5_000);
    const rec = await runCli(['reconcile', '--store', url, '--actions', modulePath, '--once', '--json']);
    expect(rec.stderr).toBe('');
    expect(rec.code).toBe(0);
    expect(JSON.parse(rec.stdout)).toMatchObject({
      claimed: 1,
      byStatus: { verified: 1, pending: 0, failed: 0, unknown: 0 },
      errors: 0,
    });
    expect(await row(emailA.operationId)).toMatchObject({
      lifecycle: 'settled',
      status: 'verified',
      lease_owner: null,
    });
    // The provider holds one message per recipient: settling read back, it did not send again.
    expect(hd.mail.inbox('a@example.com')).toHaveLength(1);

    const again = JSON.parse(
      (await runCli(['reconcile', '--store', url, '--actions', modulePath, '--once', '--json'])).stdout,
    );
    expect(again).toMatchObject({ claimed: 0 });
    const open = JSON.parse(
      (await runCli(['ops', 'list', '--store', url, '--status', 'pending', '--json'])).stdout,
    );
    expect(open).toEqual([]);
  });

  it('refuses a schema that does not exist or has no readback tables, for every command, creating nothing', async () => {
    const schemaState = async (name: string) => {
      const { rows } = await db.query(
        `SELECT (SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1)::int AS schemas,
                (SELECT count(*) FROM information_schema.tables WHERE table_schema = $1)::int AS tables`,
        [name],
      );
      return rows[0] as { schemas: number; tables: number };
    };
    // A password in the URL (trust auth ignores it) must not reach the message.
    const withPassword = new URL(PG_URL);
    withPassword.password = 'hunter2';
    const specFor = (name: string) =>
      `${withPassword.toString()}${withPassword.search ? '&' : '?'}schema=${name}`;
    const commands = (spec: string) => [
      ['ops', 'list', '--store', spec],
      ['ops', 'show', seeded.emailA.operationId, '--store', spec, '--json'],
      [
        'ops',
        'resolve',
        seeded.emailA.operationId,
        '--store',
        spec,
        '--status',
        'failed',
        '--note',
        'n',
        '--by',
        'dana',
      ],
      ['review', '--store', spec, '--run', 'cli-pg'],
      ['reconcile', '--store', spec, '--actions', modulePath, '--once'],
    ];

    const missing = tempSchema();
    for (const argv of commands(specFor(missing))) {
      const { code, stdout, stderr } = await runCli(argv);
      expect(code, argv.join(' ')).toBe(2);
      if (argv.includes('--json')) expect(JSON.parse(stdout).error.exitCode).toBe(2);
      else expect(stdout).toBe('');
      expect(stderr.split('\n')[0]).toBe(
        `readback: no store at ${redact(specFor(missing))} (schema '${missing}' not found); pass the ?schema= your program's store uses; readback creates nothing here`,
      );
      expect(stderr).toContain(':***@');
      expect(stderr).not.toContain('hunter2');
      expect(await schemaState(missing), argv.join(' ')).toEqual({ schemas: 0, tables: 0 });
    }

    // A schema that exists but is someone else's (or empty) is not turned into a readback store either.
    const foreign = tempSchema();
    await db.query(`CREATE SCHEMA "${foreign}"`);
    for (const argv of commands(specFor(foreign))) {
      const { code, stderr } = await runCli(argv);
      expect(code, argv.join(' ')).toBe(2);
      expect(stderr).toContain(`schema '${foreign}' has no readback tables, not a readback store`);
      expect(await schemaState(foreign)).toEqual({ schemas: 1, tables: 0 });
    }

    // The seeded schema, named the same way, still opens for each of them.
    const ok = await runCli(['ops', 'list', '--store', specFor(schema), '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toHaveLength(3);
    const review = await runCli(['review', '--store', specFor(schema), '--run', 'no-such-run']);
    expect(review.code).toBe(1);
    expect(review.stderr).toContain("has no operations for run 'no-such-run'");
    const rec = await runCli([
      'reconcile',
      '--store',
      specFor(schema),
      '--actions',
      modulePath,
      '--once',
      '--json',
    ]);
    expect(rec.code, rec.stderr).toBe(0);
    expect(JSON.parse(rec.stdout)).toMatchObject({ errors: 0 });
  });

  it('reports an unreachable database as a command error without echoing the password', async () => {
    const base = new URL(PG_URL);
    base.password = 'hunter2';
    base.pathname = '/readback_no_such_database';
    const spec = `${base.toString()}${base.search ? '&' : '?'}schema=${schema}`;
    const { code, stderr } = await runCli(['ops', 'list', '--store', spec]);
    expect(code).toBe(1);
    expect(stderr).toContain('could not open store postgres');
    expect(stderr).toContain(':***@');
    expect(stderr).not.toContain('hunter2');
  });
});
