import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';
import type { OperationStore } from '../../src/store/types.js';
import { resolveArgv, runCli } from './support.js';

let dir: string;
let db: string;
let store: OperationStore;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'readback-ops-lease-'));
  db = join(dir, 'ops.db');
  store = await sqliteStore({ path: db });
  await store.reserve(
    {
      id: 'op-1',
      action: 'send_email',
      target: 'email:cy@example.com',
      scope: {},
      fingerprint: 'f',
      idempotencyKey: 'k-1',
      runId: 'r',
      actor: null,
      input: {},
      requestedAt: 1,
    },
    { type: 'reserved', at: 1, from: null, to: 'requested', status: null, actor: null, attempt: 0 },
  );
  await store.transition(
    'op-1',
    ['requested'],
    { lifecycle: 'accepted', status: 'pending', attempt: 1, nextPollAt: 2 },
    {
      type: 'accepted',
      at: 2,
      from: 'requested',
      to: 'accepted',
      status: 'pending',
      actor: null,
      attempt: 1,
    },
  );
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const resolve = (status = 'failed') =>
  runCli(['ops', 'resolve', 'op-1', '--store', db, '--status', status, '--note', 'bounced', '--by', 'maria']);

// The reconciler's own settle: a compare-and-set under its lease token, as the runner writes it.
const settleUnderLease = (token: string) =>
  store.transition(
    'op-1',
    ['accepted'],
    { lifecycle: 'settled', status: 'verified', leaseOwner: null, leaseToken: null, leaseExpiresAt: null },
    { type: 'settled', at: 3, from: 'accepted', to: 'settled', status: 'verified', actor: null, attempt: 1 },
    { leaseToken: token },
  );

describe('ops resolve on an operation a reconciler is driving (real SQLite)', () => {
  it('refuses while the lease is live, naming its holder, and the reconciler alone settles it', async () => {
    const [claim] = await store.claimDue(10, 60_000, 'reconciler-7', Date.now());
    expect(claim?.record.id).toBe('op-1');
    const eventsBefore = await store.events('op-1');

    const r = await resolve();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('is being read back by reconciler-7');
    expect(r.stderr).toContain('nothing was changed');
    expect(await store.events('op-1')).toEqual(eventsBefore);
    expect((await store.get('op-1'))?.lifecycle).toBe('accepted');

    expect(await settleUnderLease(claim!.leaseToken)).not.toBeNull();
    const again = await resolve('verified');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already settled as verified');
    const events = await store.events('op-1');
    expect(events.filter((e) => e.to === 'settled').map((e) => e.type)).toEqual(['settled']);
  });

  it('resolves once the lease has expired, and the stale reconciler cannot settle it a second time', async () => {
    const [claim] = await store.claimDue(10, 1, 'reconciler-7', Date.now() - 1_000);
    expect(claim).toBeDefined();
    const r = await resolve();
    expect(r.code).toBe(0);
    expect(await settleUnderLease(claim!.leaseToken)).toBeNull();
    const record = await store.get('op-1');
    expect(record).toMatchObject({ lifecycle: 'settled', status: 'failed', leaseOwner: null });
    const events = await store.events('op-1');
    expect(events.filter((e) => e.to === 'settled').map((e) => e.type)).toEqual(['operator_resolved']);
  });
});

describe('ops show and resolve with a partial id', () => {
  // Ids are long (`op-mx3by2tk-08`); a prefix answered only "no operation op-mx3" left the operator guessing.
  it('names the ids a prefix could mean, and resolves nothing by guess', async () => {
    const show = await runCli(['ops', 'show', 'op-', '--store', db]);
    expect(show.code).toBe(1);
    expect(show.stderr).toBe(
      'readback: no operation op- (ids are matched in full; ids starting with it: op-1)\n',
    );
    const r = await runCli(resolveArgv('op', db));
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('ids starting with it: op-1');
    expect((await store.get('op-1'))?.lifecycle).toBe('accepted');
    expect((await store.events('op-1')).map((e) => e.type)).toEqual(['reserved', 'accepted']);
  });

  it('never echoes control characters from the id argument', async () => {
    const r = await runCli(['ops', 'show', 'x\u001b[2J', '--store', db]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('readback: no operation x\\u001b[2J\n');
  });
});
