import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';
import { type Lifecycle, OPEN_LIFECYCLES, type OperationStore } from '../../src/store/types.js';
import { createHelpdesk } from '../../src/testing/helpdesk.js';
import { resolveArgv, runCli } from './support.js';

let dir: string;
let db: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'readback-ops-audit-'));
  db = join(dir, 'ops.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function seed(fn: (store: OperationStore, hd: ReturnType<typeof createHelpdesk>) => Promise<void>) {
  const store = await sqliteStore({ path: db });
  const hd = createHelpdesk();
  await fn(store, hd);
  await store.close();
}

async function reserveAt(store: OperationStore, id: string, lifecycle: Lifecycle) {
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
      input: { id, status: 'resolved' },
      requestedAt: 1,
    },
    { type: 'reserved', at: 1, from: null, to: 'requested', status: null, actor: null, attempt: 0 },
  );
  if (lifecycle !== 'requested') {
    await store.transition(
      id,
      ['requested'],
      { lifecycle, status: lifecycle === 'settled' ? 'verified' : 'pending', attempt: 1 },
      { type: 'x', at: 2, from: 'requested', to: lifecycle, status: null, actor: null, attempt: 1 },
    );
  }
}

describe('ops resolve, adversarially', () => {
  it('resolves every open lifecycle keeping earlier events, and refuses a settled one changing nothing', async () => {
    const all: Lifecycle[] = [...OPEN_LIFECYCLES, 'settled'];
    await seed(async (store) => {
      for (const l of all) await reserveAt(store, `op-${l}`, l);
    });
    for (const l of all) {
      const before = JSON.parse((await runCli(['ops', 'show', `op-${l}`, '--store', db, '--json'])).stdout);
      const r = await runCli(resolveArgv(`op-${l}`, db));
      const after = JSON.parse((await runCli(['ops', 'show', `op-${l}`, '--store', db, '--json'])).stdout);
      if (l === 'settled') {
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(/already settled as verified.*nothing was changed/);
        expect(after).toEqual(before);
      } else {
        expect(r.code).toBe(0);
        expect(after.events.slice(0, -1)).toEqual(before.events);
        expect(after.events.at(-1)).toMatchObject({ type: 'operator_resolved', from: l, to: 'settled' });
        expect(after.record).toMatchObject({ lifecycle: 'settled', status: 'failed', leaseToken: null });
      }
    }
  });

  it('refuses a bad --status before opening the store', async () => {
    await seed(async (store) => reserveAt(store, 'op-1', 'accepted'));
    for (const s of ['Verified', 'unknown', 'pending', 'no_op', '', ' verified', 'verified ']) {
      const r = await runCli([
        'ops',
        'resolve',
        'op-1',
        '--store',
        db,
        `--status=${s}`,
        '--note',
        'n',
        '--by',
        'm',
      ]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("option '--status' must be verified or failed");
    }
    const shown = JSON.parse((await runCli(['ops', 'show', 'op-1', '--store', db, '--json'])).stdout);
    expect(shown.record.lifecycle).toBe('accepted');
  });

  // A note (or a tool's error, or a model-chosen target) with line breaks forged lines of `ops show`
  // ("  status  verified" under a failed operation), and escape sequences went to the operator's terminal.
  it('prints notes with line breaks and escape sequences on one line, escaped', async () => {
    await seed(async (store) => reserveAt(store, 'op-1', 'accepted'));
    const note = 'line one\n  status      verified\n\u001b[2J\u001b[31mred\u001b[0m ünï 🚫';
    const r = await runCli([
      'ops',
      'resolve',
      'op-1',
      '--store',
      db,
      '--status',
      'failed',
      '--note',
      note,
      '--by',
      'maria',
    ]);
    expect(r.code).toBe(0);
    const shown = await runCli(['ops', 'show', 'op-1', '--store', db]);
    for (const out of [r.stdout, shown.stdout]) {
      expect(out).not.toContain('\u001b');
      expect(out.split('\n').filter((line) => /^\s+status\s+verified/.test(line))).toEqual([]);
      expect(out).toContain('line one\\n  status      verified\\n\\u001b[2J');
      expect(out).toContain('ünï 🚫');
    }
    // The stored note is the operator's words, exactly.
    const json = JSON.parse((await runCli(['ops', 'show', 'op-1', '--store', db, '--json'])).stdout);
    expect(json.events.at(-1).detail.note).toBe(note);
  });

  it('escapes control characters in list cells (a target is chosen by the model)', async () => {
    await seed(async (store) => reserveAt(store, 'op-\u001b[2Jx', 'accepted'));
    const r = await runCli(['ops', 'list', '--store', db]);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('\u001b');
    expect(r.stdout).toContain('op-\\u001b[2Jx');
  });

  it('refuses a --by with a line break or control character (exit 2), changing nothing', async () => {
    await seed(async (store) => reserveAt(store, 'op-1', 'accepted'));
    for (const [flag, by] of [
      ['by', 'maria\nroot'],
      ['by', 'maria\u0007'],
    ]) {
      const r = await runCli([
        'ops',
        'resolve',
        'op-1',
        '--store',
        db,
        '--status',
        'failed',
        '--note',
        'n',
        '--by',
        by!,
      ]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`option '--${flag}' must not contain control characters`);
    }
    const shown = JSON.parse((await runCli(['ops', 'show', 'op-1', '--store', db, '--json'])).stdout);
    expect(shown.record.lifecycle).toBe('accepted');
  });

  it('takes a very long note and keeps it whole', async () => {
    await seed(async (store) => reserveAt(store, 'op-1', 'accepted'));
    const long = `${'x'.repeat(200_000)}END`;
    const r = await runCli([
      'ops',
      'resolve',
      'op-1',
      '--store',
      db,
      '--status',
      'verified',
      '--note',
      long,
      '--by',
      'm',
    ]);
    expect(r.code).toBe(0);
    const json = JSON.parse((await runCli(['ops', 'show', 'op-1', '--store', db, '--json'])).stdout);
    expect(json.events.at(-1).detail.note).toBe(long);
    expect(json.record.completion).toMatchObject({ status: 'verified', errorCode: 'operator_resolved' });
  });
});
