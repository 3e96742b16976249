import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Action } from '../../src/contract/types.js';
import { createRunner } from '../../src/runner/runner.js';
import { compileSources } from '../support/compile.mjs';
import { HAS_SQLITE } from './stand-ins.js';

// The CLI runs as a child process on plain Node (signals, Node's own module loader), from a transpiled copy
// of today's sources, against a real SQLite file.
let out = '';
beforeAll(async () => {
  out = await compileSources(
    ['src/cli/main.ts', 'src/index.ts', 'src/testing/schema.ts', 'src/sqlite/index.ts'],
    'cli-signal',
  );
}, 60_000);
afterAll(() => rmSync(out, { recursive: true, force: true }));

// deliver_note, whose read announces itself in a file (so the test knows work is in flight) and then takes
// READ_MS before the provider reports the note delivered.
const MODULE = (root: string, dir: string) => `
import { appendFileSync } from 'node:fs';
import { accepted, defineAction } from ${JSON.stringify(pathToFileURL(join(root, 'src/index.js')).href)};
import { schema } from ${JSON.stringify(pathToFileURL(join(root, 'src/testing/schema.js')).href)};

export const deliverNote = defineAction({
  name: 'deliver_note',
  description: 'Deliver a note; reading it back is slow.',
  input: schema({ to: 'string' }),
  target: (input) => 'note:' + input.to,
  mode: 'accepted',
  postcondition: 'The provider reports the note delivered.',
  execute: (input) => accepted('job-' + input.to),
  observe: async (input) => {
    appendFileSync(${JSON.stringify(join(dir, 'reads'))}, input.to + '\\n');
    await new Promise((resolve) => setTimeout(resolve, Number(process.env.READ_MS ?? 0)));
    return { to: input.to, status: 'delivered' };
  },
  terminal: () => 'succeeded',
  expect: () => ({ status: 'delivered' }),
  safeToRepeat: true,
  poll: { initialDelayMs: 1, maxDelayMs: 1, jitter: 0, maxDurationMs: 600000, maxReads: 5 },
});
`;

let dir: string;
let db: string;
let modulePath: string;
const children: ChildProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'readback-reconcile-signal-'));
  db = join(dir, 'ops.db');
  modulePath = join(dir, 'actions.mjs');
  writeFileSync(modulePath, MODULE(out, dir));
});

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function sqlite() {
  const { sqliteStore } = await import('../../src/sqlite/index.js');
  return sqliteStore({ path: db });
}

/** Seeds `count` pending deliver_note operations into the SQLite file `db`. */
async function seed(count: number): Promise<string[]> {
  const mod = (await import(pathToFileURL(modulePath).href)) as { deliverNote: Action };
  const store = await sqlite();
  const runner = createRunner({ store, actions: [mod.deliverNote] });
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const c = await runner.run(mod.deliverNote, { to: `user${i}` }, { runId: 'seed', wait: false });
    ids.push(c.operationId);
  }
  await store.close();
  await new Promise((r) => setTimeout(r, 20));
  return ids;
}

async function records(ids: string[]) {
  const store = await sqlite();
  try {
    return await Promise.all(ids.map(async (id) => (await store.get(id))!));
  } finally {
    await store.close();
  }
}

/** Starts `readback <args>`; resolves with its exit code, signal and output once it ends. */
function start(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [join(out, 'src/cli/main.js'), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr!.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string; at: number }>((res) => {
    child.on('close', (code) => res({ code, stdout, stderr, at: Date.now() }));
  });
  return { child, done };
}

/** Waits until `n` reads have started in the child. */
async function readsStarted(n: number): Promise<void> {
  const { readFileSync } = await import('node:fs');
  const file = join(dir, 'reads');
  await vi.waitFor(
    () => {
      expect(existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').length : 0).toBe(n);
    },
    { timeout: 10_000, interval: 20 },
  );
}

describe.skipIf(!HAS_SQLITE)('readback reconcile: SIGTERM and --json on a real process', () => {
  it('SIGTERM mid-read: says it is stopping, finishes the reads, exits 0 with one JSON line, no lease held', async () => {
    const ids = await seed(2);
    const run = start(['reconcile', '--store', db, '--actions', modulePath, '--json'], { READ_MS: '600' });
    await readsStarted(2);
    run.child.kill('SIGTERM');
    const r = await run.done;
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('readback: SIGTERM; stopping after in-flight work (send it again to exit now)\n');
    // One object on one line: a log collector keeps it as one record.
    const lines = r.stdout.split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe('');
    expect(JSON.parse(lines[0]!)).toMatchObject({ claimed: 2, byStatus: { verified: 2 }, errors: 0 });
    for (const record of await records(ids)) {
      expect(record).toMatchObject({ lifecycle: 'settled', status: 'verified', leaseOwner: null });
    }
  });

  it('a second signal exits at once (143), saying so, and leaves the reads leased until --lease-ms', async () => {
    const ids = await seed(1);
    const run = start(['reconcile', '--store', db, '--actions', modulePath, '--lease-ms', '600000'], {
      READ_MS: '30000',
    });
    await readsStarted(1);
    run.child.kill('SIGTERM');
    await vi.waitFor(() => expect(run.child.exitCode).toBe(null));
    await new Promise((r) => setTimeout(r, 100));
    const sent = Date.now();
    run.child.kill('SIGTERM');
    const r = await run.done;
    expect(r.code).toBe(143);
    expect(r.at - sent).toBeLessThan(5_000);
    expect(r.stderr).toContain(
      'readback: SIGTERM; stopping after in-flight work (send it again to exit now)\n',
    );
    expect(r.stderr).toContain(
      'readback: SIGTERM again; exiting now, in-flight leases lapse after --lease-ms\n',
    );
    const [record] = await records(ids);
    expect(record).toMatchObject({ lifecycle: 'accepted', status: 'pending' });
    expect(record!.leaseOwner).not.toBeNull();
    expect(record!.leaseExpiresAt).toBeGreaterThan(Date.now() + 500_000);
  });
});

// Node 22.18 and later strip types themselves, so there a .ts actions module loads like any other.
const loadsTypeScript = Boolean((process.features as { typescript?: unknown }).typescript);

describe.skipIf(!HAS_SQLITE)('readback reconcile --actions: a file Node does not load', () => {
  it('is a usage error (exit 2) naming the module and its extension, not a loader error', async () => {
    const ids = await seed(1);
    for (const [name, ext] of [
      ['actions.ts', '.ts'],
      ['ops-copy.db', '.db'],
    ] as const) {
      const file = join(dir, name);
      writeFileSync(file, 'export const x = 1;\n');
      const r = await start(['reconcile', '--store', db, '--actions', file, '--once']).done;
      expect(r.code, name).toBe(2);
      const why =
        ext === '.ts' && loadsTypeScript
          ? 'exports no actions; export the results of defineAction() (directly, or in an array or object)'
          : `is not a JavaScript module (${ext}); name the compiled .js/.mjs file`;
      expect(r.stderr).toContain(`readback: actions module ${file} ${why}\n`);
    }
    const [record] = await records(ids);
    expect(record).toMatchObject({ status: 'pending' });
  });
});
