import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { CliIO } from '../../src/cli/args.js';
import { collectActions, runReconcile } from '../../src/cli/reconcile.js';
import { openStore } from '../../src/cli/store.js';
import type { Action } from '../../src/contract/types.js';
import { postgresStore } from '../../src/postgres/index.js';
import { createRunner } from '../../src/runner/runner.js';
import type { OperationStore } from '../../src/store/types.js';
import { PG_URL, pgSuite, storeUrl } from '../postgres/support.js';
import { compileSources } from '../support/compile.mjs';
import { HAS_SQLITE, storesByPath } from './stand-ins.js';
import { runCli } from './support.js';

// Until src/sqlite/index.ts exists, `openStore` is pointed at memory stores registered by path.
const stores = storesByPath();

vi.mock('../../src/cli/store.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/cli/store.js')>();
  return { ...real, openStore: vi.fn(real.openStore) };
});

// The real Postgres store, watched: the CLI's Postgres flags must reach it as options.
vi.mock('../../src/postgres/index.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/postgres/index.js')>();
  return { ...real, postgresStore: vi.fn(real.postgresStore) };
});

const run = promisify(execFile);

const SRC = (file: string) => pathToFileURL(resolve(import.meta.dirname, '../../src', file)).href;

// An accepted-mode action whose provider is a JSON file next to the module: the test and the CLI's
// runner share it, so the test can make queued work finish between the seeding run and the reconcile.
const ACTIONS_MODULE = `
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { accepted, defineAction } from ${JSON.stringify(SRC('index.ts'))};
import { schema } from ${JSON.stringify(SRC('testing/schema.ts'))};

const STATE = new URL('./provider.json', import.meta.url);
const read = () => (existsSync(STATE) ? JSON.parse(readFileSync(STATE, 'utf8')) : {});

export const deliverNote = defineAction({
  name: 'deliver_note',
  description: 'Deliver a note through a file-backed provider.',
  input: schema({ to: 'string' }),
  target: (input) => 'note:' + input.to,
  mode: 'accepted',
  postcondition: 'The provider reports the note delivered.',
  execute(input) {
    writeFileSync(STATE, JSON.stringify({ ...read(), [input.to]: 'queued' }));
    return accepted('job-' + input.to, { queued: input.to });
  },
  observe: (input) => {
    const status = read()[input.to];
    return status === undefined ? null : { to: input.to, status };
  },
  terminal: (m) => (m.status === 'queued' ? 'running' : m.status === 'delivered' ? 'succeeded' : 'failed'),
  expect: () => ({ status: 'delivered' }),
  safeToRepeat: true,
  poll: { initialDelayMs: 1, maxDelayMs: 1, jitter: 0, maxDurationMs: 600000, maxReads: 50 },
});

// The same action again, in an object and an array: collected once.
export const actions = { deliverNote };
export default [deliverNote];
export const notAnAction = { name: 'deliver_note' };
`;

let dir: string;
let db: string;
let modulePath: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'readback-reconcile-'));
  db = join(dir, 'ops.db');
  modulePath = join(dir, 'actions.mjs');
  writeFileSync(modulePath, ACTIONS_MODULE);
  stores.route();
});

afterEach(() => {
  stores.clear();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Seeds `count` pending accepted operations (into `into`, else the SQLite file `db`), then lets the
 * provider deliver them (unless `deliver` is false).
 */
async function seedPending(count: number, deliver = true, into?: OperationStore): Promise<string[]> {
  const mod = (await import(pathToFileURL(modulePath).href)) as { deliverNote: Action };
  const store = into ?? (await stores.create(db));
  const runner = createRunner({ store, actions: [mod.deliverNote] });
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const c = await runner.run(mod.deliverNote, { to: `user${i}` }, { runId: 'seed', wait: false });
    expect(c).toMatchObject({ status: 'pending', nextAllowedAction: 'poll' });
    ids.push(c.operationId);
  }
  if (HAS_SQLITE && into === undefined) await store.close();
  const state = join(dir, 'provider.json');
  if (deliver && existsSync(state)) {
    const delivered = Object.fromEntries(
      Object.keys(JSON.parse(readFileSync(state, 'utf8'))).map((k) => [k, 'delivered']),
    );
    writeFileSync(state, JSON.stringify(delivered));
  }
  // The seeded operations' next poll is 1 ms out; let it come due.
  await new Promise((r) => setTimeout(r, 20));
  return ids;
}

async function record(id: string) {
  const { stdout } = await runCli(['ops', 'show', id, '--store', db, '--json']);
  return JSON.parse(stdout).record as { lifecycle: string; status: string; completion: { status: string } };
}

function sink() {
  const out: string[] = [];
  const io: CliIO = {
    stdout: { write: (c: string) => out.push(c) },
    stderr: { write: (c: string) => out.push(c) },
    env: {},
  };
  return { io, out: () => out.join('') };
}

describe('readback reconcile --once', () => {
  it('settles a pending accepted operation from the store and prints the report as JSON', async () => {
    const [id] = await seedPending(1);
    expect(await record(id!)).toMatchObject({ lifecycle: 'accepted', status: 'pending' });

    const { code, stdout, stderr } = await runCli([
      'reconcile',
      '--store',
      db,
      '--actions',
      modulePath,
      '--once',
      '--json',
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const report = JSON.parse(stdout);
    expect(report).toEqual({
      rounds: 1,
      claimed: 1,
      byStatus: { verified: 1, pending: 0, failed: 0, partial: 0, no_op: 0, unknown: 0 },
      unknownAction: 0,
      errors: 0,
      leasesLost: 0,
    });
    expect(await record(id!)).toMatchObject({
      lifecycle: 'settled',
      status: 'verified',
      completion: { status: 'verified' },
    });

    // Nothing is due any more: a second pass claims nothing.
    const again = JSON.parse(
      (await runCli(['reconcile', '--store', db, '--actions', modulePath, '--once', '--json'])).stdout,
    );
    expect(again).toMatchObject({ rounds: 0, claimed: 0 });
  });

  it('prints plain progress lines off a terminal and a final summary', async () => {
    await seedPending(3);
    const { code, stdout } = await runCli([
      'reconcile',
      '--store',
      db,
      '--actions',
      modulePath,
      '--once',
      '--concurrency',
      '2',
      '--lease-ms',
      '5000',
    ]);
    expect(code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines).toEqual([
      'reconcile: 1 round · 2 claimed · verified 2 · failed 0 · unknown 0 · pending 0',
      'reconcile: 2 rounds · 3 claimed · verified 3 · failed 0 · unknown 0 · pending 0',
      'done: 2 rounds · 3 claimed · verified 3 · failed 0 · unknown 0 · pending 0 · leases lost 0',
    ]);
    expect(stdout).not.toContain('\r');
  });

  it('rewrites one progress line on a terminal', async () => {
    await seedPending(2, false);
    const { code, stdout } = await runCli(['reconcile', '--store', db, '--actions', modulePath, '--once'], {
      tty: 100,
    });
    expect(code).toBe(0);
    expect(stdout).toContain(
      '\r\u001b[Kreconcile: 1 round · 2 claimed · verified 0 · failed 0 · unknown 0 · pending 2',
    );
    expect(
      stdout.endsWith(
        '\ndone: 1 round · 2 claimed · verified 0 · failed 0 · unknown 0 · pending 2 · leases lost 0\n',
      ),
    ).toBe(true);
  });
});

describe('readback reconcile --once: exit code', () => {
  /** Opens the store once more for the CLI, with `method` failing as a read-only file fails a write. */
  function refuse(
    method: 'transition' | 'claimDue',
    error: () => Error = () => new Error('attempt to write a readonly database'),
  ) {
    const real = vi.mocked(openStore).getMockImplementation() ?? openStore;
    vi.mocked(openStore).mockImplementationOnce(async (spec, options) => {
      const store = await real(spec, options);
      const fail = async () => {
        throw error();
      };
      return { ...store, [method]: fail, close: () => store.close() };
    });
  }

  it('exits 1 when the pass counted errors (a drive or a claim failed), still printing the report', async () => {
    const [id] = await seedPending(1);
    refuse('transition');
    const human = await runCli(['reconcile', '--store', db, '--actions', modulePath, '--once']);
    expect(human.code).toBe(1);
    expect(human.stdout.trimEnd().split('\n').at(-1)).toBe(
      'done: 1 round · 1 claimed · verified 0 · failed 0 · unknown 0 · pending 0 · errors 1 · leases lost 0',
    );
    expect(human.stderr).toBe(
      'readback: last error while reconciling: attempt to write a readonly database\n',
    );
    expect(await record(id!)).toMatchObject({ lifecycle: 'accepted', status: 'pending' });

    refuse('claimDue');
    const json = await runCli(['reconcile', '--store', db, '--actions', modulePath, '--once', '--json']);
    expect(json.code).toBe(1);
    expect(json.stderr).toBe('');
    expect(JSON.parse(json.stdout)).toMatchObject({
      rounds: 0,
      claimed: 0,
      errors: 1,
      lastError: expect.stringContaining('attempt to write a readonly database'),
    });
  });

  it('without --once, exits 0 when stopped even after errors: the loop retries them', async () => {
    await seedPending(1);
    // A lost connection comes back: the loop waits and retries it.
    refuse('claimDue', () => Object.assign(new Error('connection reset by peer'), { code: 'ECONNRESET' }));
    let stop: (() => void) | undefined;
    const { io, out } = sink();
    const done = runReconcile({ flags: { store: db, actions: modulePath }, positionals: [] }, io, (s) => {
      stop = s;
      return () => undefined;
    });
    // The progress line gives the reason as it happens, not only a count.
    await vi.waitFor(
      () => expect(out()).toContain('errors 1 · last error: ECONNRESET: connection reset by peer'),
      {
        timeout: 5_000,
      },
    );
    stop!();
    expect(await done).toBe(0);
    expect(out()).toContain('stopped: 0 rounds · 0 claimed');
    expect(out()).toContain('readback: last error while reconciling: ECONNRESET: connection reset by peer');
  });

  it('without --once, keeps retrying what passes: WAL recovery by another connection, a file it cannot open now', async () => {
    await seedPending(1);
    const passing = [
      Object.assign(new Error('attempt to write a readonly database'), { code: 'SQLITE_READONLY_RECOVERY' }),
      Object.assign(new Error('unable to open database file'), { code: 'SQLITE_CANTOPEN' }),
    ];
    let calls = 0;
    refuse('claimDue', () => passing[calls++ % 2]!);
    let stop: (() => void) | undefined;
    const { io, out } = sink();
    const done = runReconcile({ flags: { store: db, actions: modulePath }, positionals: [] }, io, (s) => {
      stop = s;
      return () => undefined;
    });
    await vi.waitFor(() => expect(out()).toContain('errors 1 · last error: SQLITE_READONLY_RECOVERY'), {
      timeout: 5_000,
    });
    // The next claim, after the pause, fails the other way, and the loop goes on.
    await vi.waitFor(() => expect(out()).toContain('errors 2 · last error: SQLITE_CANTOPEN'), {
      timeout: 8_000,
    });
    stop!();
    expect(await done).toBe(0);
    expect(out()).not.toContain('gave up');
  });

  it('without --once, stops on a read-only store and exits 1, saying why', async () => {
    const readOnly = () =>
      Object.assign(new Error('attempt to write a readonly database'), { code: 'SQLITE_READONLY' });
    const nodeSqlite = () =>
      Object.assign(new Error('attempt to write a readonly database'), {
        code: 'ERR_SQLITE_ERROR',
        errcode: 8,
      });
    await seedPending(1);
    for (const error of [readOnly, nodeSqlite]) {
      refuse('claimDue', error);
      const { io, out } = sink();
      // No stop is ever requested: the loop must end by itself.
      const code = await runReconcile(
        { flags: { store: db, actions: modulePath }, positionals: [] },
        io,
        () => {
          return () => undefined;
        },
      );
      expect(code).toBe(1);
      const reason = `${(error() as { code?: string }).code}: ${error().message}`;
      expect(out()).toContain(
        `reconcile: 0 rounds · 0 claimed · verified 0 · failed 0 · unknown 0 · pending 0 · errors 1 · last error: ${reason}\n`,
      );
      expect(out()).toContain('gave up: 0 rounds · 0 claimed');
      expect(out()).toContain(`readback: last error while reconciling: ${reason}`);
    }
    // Under --json the report is printed and the exit code says the same.
    refuse('claimDue', readOnly);
    const json = await runCli(['reconcile', '--store', db, '--actions', modulePath, '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      errors: 1,
      lastError: expect.stringContaining('readonly'),
    });
  });

  it('exits 0 when an operation ends unknown because its read budget ran out', async () => {
    await seedPending(1, false);
    // The same action with a budget of one read: still queued at that read, the operation ends unknown.
    const oneRead = join(dir, 'one-read.mjs');
    writeFileSync(oneRead, ACTIONS_MODULE.replace('maxReads: 50', 'maxReads: 1'));
    const { code, stdout } = await runCli([
      'reconcile',
      '--store',
      db,
      '--actions',
      oneRead,
      '--once',
      '--json',
    ]);
    expect(JSON.parse(stdout)).toMatchObject({ claimed: 1, byStatus: { unknown: 1 }, errors: 0 });
    expect(code).toBe(0);
  });
});

describe('readback reconcile (loop)', () => {
  it('stops on a stop request after in-flight work, closes the store and exits 0', async () => {
    const [id] = await seedPending(1);
    let closed = 0;
    const actual = vi.mocked(openStore).getMockImplementation()!;
    vi.mocked(openStore).mockImplementationOnce(async (spec, options) => {
      const store = await actual(spec, options);
      return {
        ...store,
        close: async () => {
          closed++;
          await store.close();
        },
      };
    });
    let stop: (() => void) | undefined;
    let removed = false;
    const { io, out } = sink();
    const done = runReconcile({ flags: { store: db, actions: modulePath }, positionals: [] }, io, (s) => {
      stop = s;
      return () => {
        removed = true;
      };
    });
    await vi.waitFor(async () => expect(out()).toContain('reconcile: 1 round · 1 claimed · verified 1'), {
      timeout: 5_000,
    });
    stop!();
    expect(await done).toBe(0);
    expect(removed).toBe(true);
    expect(closed).toBe(1);
    expect(out()).toMatch(/^reconciling .* with 1 action \(Ctrl-C stops after in-flight work\)\n/);
    expect(out()).toContain('stopped: 1 round · 1 claimed · verified 1');
    expect(await record(id!)).toMatchObject({ lifecycle: 'settled', status: 'verified' });
  });

  it('listens for SIGINT/SIGTERM only while it runs', async () => {
    await seedPending(1);
    const before = process.listenerCount('SIGTERM');
    const beforeInt = process.listenerCount('SIGINT');
    const run = runCli(['reconcile', '--store', db, '--actions', modulePath, '--json']);
    await vi.waitFor(() => expect(process.listenerCount('SIGTERM')).toBe(before + 1), { timeout: 5_000 });
    const [listener] = process.listeners('SIGTERM').slice(-1);
    (listener as (s: NodeJS.Signals) => void)('SIGTERM');
    const { code, stdout } = await run;
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ claimed: 1 });
    expect(process.listenerCount('SIGTERM')).toBe(before);
    expect(process.listenerCount('SIGINT')).toBe(beforeInt);
  });
});

describe('readback reconcile: bad input', () => {
  it('needs --actions, and a module that exists and exports actions', async () => {
    await seedPending(0);
    const none = await runCli(['reconcile', '--store', db, '--once']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("'readback reconcile' needs --actions <module>");

    const missing = join(dir, 'nope.mjs');
    const notFound = await runCli(['reconcile', '--store', db, '--actions', missing, '--once']);
    expect(notFound.code).toBe(2);
    expect(notFound.stderr).toContain(`actions module not found: ${missing}`);

    const empty = join(dir, 'empty.mjs');
    writeFileSync(empty, 'export const answer = 42;\nexport const config = { retries: 3 };\n');
    const noActions = await runCli(['reconcile', '--store', db, '--actions', empty, '--once']);
    expect(noActions.code).toBe(2);
    expect(noActions.stderr).toContain(`actions module ${empty} exports no actions`);

    const broken = join(dir, 'broken.mjs');
    writeFileSync(broken, 'throw new Error("boom at import");\n');
    const failed = await runCli(['reconcile', '--store', db, '--actions', broken, '--once']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain(`could not load actions module ${broken}: boom at import`);
  });

  it('refuses a missing store file without creating it, and bad numbers', async () => {
    const missing = join(dir, 'missing.db');
    const { code, stderr } = await runCli([
      'reconcile',
      '--store',
      missing,
      '--actions',
      modulePath,
      '--once',
    ]);
    expect(code).toBe(2);
    expect(stderr).toContain(`no store at ${missing} (file not found)`);
    expect(existsSync(missing)).toBe(false);

    for (const flag of ['--concurrency', '--lease-ms']) {
      const bad = await runCli(['reconcile', '--store', db, '--actions', modulePath, flag, 'lots']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain(`option '${flag}' needs a whole number ≥ 1; got 'lots'`);
    }
  });
});

// Under vitest, modules load through Vite, whose messages differ from Node's; the CLI runs here as a
// child process on plain Node, from a transpiled copy of today's sources.
describe('readback reconcile: an actions module that does not load, on plain Node', () => {
  let out = '';
  beforeAll(async () => {
    out = await compileSources(['src/cli/main.ts'], 'cli-load');
  }, 60_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('names the line where the module fails to parse or throws, in one line without a stack', async () => {
    const unparsable = join(dir, 'unparsable.mjs');
    writeFileSync(unparsable, 'export const a = 1;\n\nexport const b = ;\n');
    const throwing = join(dir, 'throwing.mjs');
    writeFileSync(throwing, 'const config = undefined;\nexport const retries = config.retries;\n');
    const cases = [
      [unparsable, `Unexpected token ';' (at ${unparsable}:3)`],
      [throwing, `Cannot read properties of undefined (reading 'retries') (at ${throwing}:2:`],
    ] as const;
    const cli = join(out, 'src/cli/main.js');
    for (const [module, expected] of cases) {
      const failed = await run(process.execPath, [cli, 'reconcile', '--store', db, '--actions', module]).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(failed?.code).toBe(1);
      expect(failed?.stderr).toContain(`readback: could not load actions module ${module}: ${expected}`);
      expect(failed?.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(existsSync(db)).toBe(false);
    }
  });
});

// The deliver_note action, whose observe first hands the operation's lease to a "thief" (another
// connection to the same file rewrites the token) and then outlasts a heartbeat, which finds it gone.
const THIEF_MODULE = (dbPath: string) => `
import { defineAction } from ${JSON.stringify(SRC('index.ts'))};
import { schema } from ${JSON.stringify(SRC('testing/schema.ts'))};
import { sqliteStore } from ${JSON.stringify(SRC('sqlite/index.ts'))};

export const deliverNote = defineAction({
  name: 'deliver_note',
  description: 'Deliver a note; its lease is stolen mid-read.',
  input: schema({ to: 'string' }),
  target: (input) => 'note:' + input.to,
  mode: 'accepted',
  postcondition: 'The provider reports the note delivered.',
  execute: () => { throw new Error('never executed by reconcile'); },
  observe: async (input) => {
    const thief = await sqliteStore({ path: ${JSON.stringify(dbPath)} });
    const record = (await thief.list()).find((r) => r.target === 'note:' + input.to);
    await thief.transition(record.id, ['accepted'], { leaseOwner: 'thief', leaseToken: 'stolen' }, {
      at: Date.now(), type: 'stolen', from: null, to: null, status: null, actor: 'thief', attempt: record.attempt,
    });
    await thief.close();
    await new Promise((resolve) => setTimeout(resolve, 400));
    return { to: input.to, status: 'delivered' };
  },
  terminal: (m) => (m.status === 'delivered' ? 'succeeded' : 'running'),
  expect: () => ({ status: 'delivered' }),
  safeToRepeat: true,
  poll: { initialDelayMs: 1, maxDelayMs: 1, jitter: 0, maxDurationMs: 600000, maxReads: 50 },
});
`;

describe.skipIf(!HAS_SQLITE)('readback reconcile: leases lost', () => {
  it('counts a heartbeat refused after another owner took the lease, in the JSON and the summary', async () => {
    const [id] = await seedPending(1);
    const thief = join(dir, 'thief.mjs');
    writeFileSync(thief, THIEF_MODULE(db));
    // 300 ms leases: a heartbeat every 100 ms, so at least one lands during the 400 ms read.
    const args = ['reconcile', '--store', db, '--actions', thief, '--once', '--lease-ms', '300'];
    const json = await runCli([...args, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      claimed: 1,
      leasesLost: 1,
      byStatus: { verified: 0, pending: 1 },
    });
    // The late write under the old token changed nothing: the thief still holds the record.
    expect(await record(id!)).toMatchObject({ lifecycle: 'accepted', status: 'pending' });

    // Once the stolen lease lapses the operation is claimable again, and is stolen again.
    await new Promise((resolve) => setTimeout(resolve, 400));
    const human = await runCli(args);
    expect(human.code).toBe(0);
    expect(human.stdout.trimEnd().split('\n')).toEqual([
      'reconcile: 1 round · 1 claimed · verified 0 · failed 0 · unknown 0 · pending 1 · leases lost 1',
      'done: 1 round · 1 claimed · verified 0 · failed 0 · unknown 0 · pending 1 · leases lost 1',
    ]);
  });
});

describe('readback reconcile: Postgres store flags', () => {
  it('refuses them for a SQLite store, and bad values, before connecting', async () => {
    await seedPending(0);
    const sqlite = await runCli([
      'reconcile',
      '--store',
      db,
      '--actions',
      modulePath,
      '--lease-clock',
      'caller',
    ]);
    expect(sqlite.code).toBe(2);
    expect(sqlite.stderr).toContain("option '--lease-clock' applies only to a postgres:// store");
    const retriesOnSqlite = await runCli([
      'reconcile',
      '--store',
      db,
      '--actions',
      modulePath,
      '--reconnect-retries',
      '3',
    ]);
    expect(retriesOnSqlite.code).toBe(2);
    expect(retriesOnSqlite.stderr).toContain(
      "option '--reconnect-retries' applies only to a postgres:// store",
    );

    const pgUrl = 'postgres://nowhere.invalid/db';
    const cases: [string[], string][] = [
      [
        ['--lease-clock', 'sometimes'],
        "option '--lease-clock' needs 'database' or 'caller'; got 'sometimes'",
      ],
      [['--reconnect-base-ms', '-1'], "option '--reconnect-base-ms' needs a whole number ≥ 0; got '-1'"],
      [['--reconnect-max-ms', 'soon'], "option '--reconnect-max-ms' needs a whole number ≥ 0; got 'soon'"],
      [
        ['--reconnect-retries', '0', '--reconnect-max-ms', '10'],
        "'--reconnect-retries 0' turns retrying off",
      ],
    ];
    for (const [flags, message] of cases) {
      const bad = await runCli(['reconcile', '--store', pgUrl, '--actions', modulePath, '--once', ...flags]);
      expect(bad.code, flags.join(' ')).toBe(2);
      expect(bad.stderr).toContain(message);
    }
  });
});

const { available: pgUp, tempSchema } = await pgSuite();

describe.skipIf(!pgUp)('readback reconcile: Postgres store flags against a real server', () => {
  const HOUR = 3_600_000;
  const LEASE_MS = 60_000;

  /** Seeds one due operation in a fresh schema; returns the store URL and the schema. */
  async function seeded() {
    const schema = tempSchema();
    const store = await postgresStore({ connectionString: PG_URL, schema });
    await seedPending(1, true, store);
    await store.close();
    return { url: storeUrl(schema), schema };
  }

  /** The lease expiry the reconcile's claim wrote, from its 'claimed' event. */
  async function claimedExpiry(schema: string): Promise<number> {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      const { rows } = await client.query(`SELECT detail FROM "${schema}".events WHERE type = 'claimed'`);
      expect(rows).toHaveLength(1);
      return Number(rows[0].detail.leaseExpiresAt);
    } finally {
      await client.end();
    }
  }

  // This process's clock runs an hour ahead of the server's: only --lease-clock caller lets it set leases.
  async function reconcileAhead(url: string, flags: string[]) {
    const realNow = Date.now.bind(Date);
    const spy = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + HOUR);
    try {
      const args = ['--actions', modulePath, '--once', '--json', '--lease-ms', String(LEASE_MS), ...flags];
      return await runCli(['reconcile', '--store', url, ...args]);
    } finally {
      spy.mockRestore();
    }
  }

  it('--lease-clock caller takes lease expiry from this process; the default takes the server clock', async () => {
    const watched = vi.mocked(postgresStore);
    for (const mode of ['caller', 'database'] as const) {
      const { url, schema } = await seeded();
      watched.mockClear();
      const before = Date.now();
      const run = await reconcileAhead(url, mode === 'caller' ? ['--lease-clock', 'caller'] : []);
      const after = Date.now();
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ claimed: 1, byStatus: { verified: 1 }, leasesLost: 0 });
      const shift = mode === 'caller' ? HOUR : 0;
      const expiry = await claimedExpiry(schema);
      expect(expiry).toBeGreaterThanOrEqual(before + shift + LEASE_MS - 1_000);
      expect(expiry).toBeLessThanOrEqual(after + shift + LEASE_MS + 1_000);
      expect(watched).toHaveBeenCalledTimes(1);
      expect(watched.mock.calls[0]![0]).toMatchObject(mode === 'caller' ? { leaseClock: 'caller' } : {});
      if (mode === 'database') expect(watched.mock.calls[0]![0]).not.toHaveProperty('leaseClock');
    }
  });

  it('passes --reconnect-* on as the store reconnect policy, and 0 retries as none', async () => {
    const watched = vi.mocked(postgresStore);
    const runs: [string[], unknown][] = [
      [
        ['--reconnect-retries', '2', '--reconnect-base-ms', '5', '--reconnect-max-ms', '50'],
        { retries: 2, baseMs: 5, maxMs: 50 },
      ],
      [['--reconnect-max-ms', '50'], { maxMs: 50 }],
      [['--reconnect-retries', '0'], false],
    ];
    for (const [flags, reconnect] of runs) {
      const { url } = await seeded();
      watched.mockClear();
      const run = await runCli([
        'reconcile',
        '--store',
        url,
        '--actions',
        modulePath,
        '--once',
        '--json',
        ...flags,
      ]);
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ claimed: 1, byStatus: { verified: 1 } });
      expect(watched.mock.calls[0]![0]).toMatchObject({ reconnect });
    }
  });
});

describe('collectActions', () => {
  it('takes actions exported directly and inside arrays and plain objects, once each', async () => {
    const mod = (await import(pathToFileURL(modulePath).href)) as Record<string, unknown>;
    const actions = collectActions(mod);
    expect(actions.map((a) => a.name)).toEqual(['deliver_note']);
    // Grouped deeper, as modules do ({ tools: { billing: [...] } }): missed before, so audit found no debt.
    const cyclic: Record<string, unknown> = { tools: { billing: [mod.deliverNote] } };
    cyclic.self = cyclic;
    expect(collectActions({ grouped: cyclic, again: mod.deliverNote }).map((a) => a.name)).toEqual([
      'deliver_note',
    ]);
  });

  it('does not enter class instances (a client or pool exported beside the actions)', async () => {
    const mod = (await import(pathToFileURL(modulePath).href)) as Record<string, unknown>;
    class Client {
      action = mod.deliverNote;
    }
    expect(collectActions({ client: new Client() })).toEqual([]);
  });
});
