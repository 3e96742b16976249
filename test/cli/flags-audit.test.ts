// `readback reconcile`'s millisecond flags are timer delays and lease lengths: a value past what Node's timers
// keep (2^31-1 ms) fires at once, and a lease shorter than a renewal round trip lapses while its operation is
// read. Both used to be taken as given. And an actions module whose exports throw when read, or whose error
// message has line breaks, used to print a raw stack or several lines instead of one line naming the module.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { MIN_LEASE_MS } from '../../src/cli/reconcile.js';
import { MAX_TIMER_MS } from '../../src/clock.js';
import { DELIVER_NOTE_MODULE, deliverNoteFolder, seedPendingNote } from './deliver-note.js';
import { storesByPath } from './stand-ins.js';
import { runCli } from './support.js';

const stores = storesByPath();

vi.mock('../../src/cli/store.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/cli/store.js')>();
  return { ...real, openStore: vi.fn(real.openStore) };
});

const _MODULE = DELIVER_NOTE_MODULE;

const paths = deliverNoteFolder('readback-flags-audit-', stores);

const seed = () => seedPendingNote(paths.modulePath, () => stores.create(paths.db));

async function record(id: string): Promise<{ status: string; claims: number }> {
  const { stdout } = await runCli(['ops', 'show', id, '--store', paths.db, '--json']);
  const shown = JSON.parse(stdout) as { record: { status: string }; events: { type: string }[] };
  return { status: shown.record.status, claims: shown.events.filter((e) => e.type === 'claimed').length };
}

const reconcile = (...flags: string[]) =>
  runCli(['reconcile', '--store', paths.db, '--actions', paths.modulePath, '--once', ...flags]);

describe('readback reconcile --lease-ms', () => {
  it('refuses a lease shorter than a renewal round trip or longer than a timer, before claiming anything, and takes both ends', async () => {
    const id = await seed();
    const range = `from ${MIN_LEASE_MS} to ${MAX_TIMER_MS}`;
    const cases: [string, string][] = [
      ['50', range],
      [String(MIN_LEASE_MS - 1), range],
      ['0', range],
      [String(MAX_TIMER_MS + 1), range],
      ['99999999999999999999', range],
      ['1.5', 'whole number'],
      ['1e6', 'whole number'],
      ['-5', 'whole number'],
    ];
    for (const [value, expected] of cases) {
      const r = await reconcile('--lease-ms', value);
      expect(r.code, value).toBe(2);
      const [line, usage, ...rest] = r.stderr.split('\n');
      expect(line).toContain(`option '--lease-ms' needs a whole number`);
      expect(line).toContain(expected);
      expect(line).toContain(`got '${value}'`);
      expect(usage).toMatch(/^usage: /);
      expect(rest).toEqual(['']);
    }
    // Nothing was claimed: every refusal came before the store was touched.
    expect(await record(id)).toEqual({ status: 'pending', claims: 0 });

    // Both ends of the range are taken.
    for (const value of [String(MIN_LEASE_MS), String(MAX_TIMER_MS)]) {
      rmSync(paths.db, { force: true });
      for (const side of ['-wal', '-shm']) rmSync(`${paths.db}${side}`, { force: true });
      const fresh = await seed();
      const r = await reconcile('--lease-ms', value, '--json');
      expect(r.code, r.stderr).toBe(0);
      expect(await record(fresh)).toEqual({ status: 'verified', claims: 1 });
    }
  });

  it('documents the range in the help', async () => {
    const { stdout } = await runCli(['reconcile', '--help']);
    expect(stdout).toContain(`${MIN_LEASE_MS} to ${MAX_TIMER_MS}`);
  });
});

describe('readback reconcile --reconnect-*-ms', () => {
  it('refuses a backoff step past what a timer keeps, before connecting', async () => {
    // Nothing listens on port 1: a refusal that came after connecting would say so instead.
    const url = 'postgres://nobody@127.0.0.1:1/none';
    for (const flag of ['--reconnect-base-ms', '--reconnect-max-ms']) {
      const r = await runCli([
        'reconcile',
        '--store',
        url,
        '--actions',
        paths.modulePath,
        flag,
        String(MAX_TIMER_MS + 1),
      ]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(
        `option '${flag}' needs a whole number of milliseconds from 0 to ${MAX_TIMER_MS}; got '${MAX_TIMER_MS + 1}'`,
      );
    }
  });
});

describe('an actions module that fails while it loads', () => {
  const load = async (name: string, source: string, command: 'reconcile' | 'audit') => {
    const path = join(paths.dir, name);
    writeFileSync(path, source);
    const r =
      command === 'reconcile'
        ? await runCli(['reconcile', '--store', paths.db, '--actions', path, '--once'])
        : await runCli(['audit', path]);
    return { path, ...r };
  };

  it('whose export throws when read is one line naming the module and the error, without a stack', async () => {
    await seed();
    const source = 'export const tools = { get billing() { throw new Error("BILLING_KEY is not set"); } };\n';
    for (const command of ['reconcile', 'audit'] as const) {
      const r = await load(`getter-${command}.mjs`, source, command);
      expect(r.code).toBe(1);
      expect(
        r.stderr.startsWith(`readback: could not load actions module ${r.path}: BILLING_KEY is not set`),
      ).toBe(true);
      expect(r.stderr).not.toContain('unexpected error');
      expect(r.stderr).not.toMatch(/^\s+at /m);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    }
  });

  it('whose error message has line breaks is still one line, the breaks escaped', async () => {
    await seed();
    const source = 'throw new Error("config invalid:\\nstatus verified\\n\\u001b[2Jcleared");\n';
    for (const command of ['reconcile', 'audit'] as const) {
      const r = await load(`multiline-${command}.mjs`, source, command);
      expect(r.code).toBe(1);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr).toContain(
        `could not load actions module ${r.path}: config invalid:\\nstatus verified\\n\\u001b[2Jcleared`,
      );
    }
  });
});
