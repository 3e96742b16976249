import { copyFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SQLITE_SCHEMA_VERSION, sqliteStore } from '../../src/sqlite/index.js';
import type { OperationEvent, OperationRecord } from '../../src/store/types.js';
import { openHandle, tempDir } from '../fixtures/sqlite/support.js';

// v1.db was written once by the schema-v1 code (test/fixtures/sqlite/make-v1.mjs) and is frozen:
// whatever the schema becomes, these records must still load exactly as they were written.
const FIXTURE = join(import.meta.dirname, '..', 'fixtures', 'sqlite', 'v1.db');
const T0 = 1_700_000_000_000;
const LEASE_TOKEN = 'c192c85d-ef6c-4a82-9dd2-3ac829321258';

const tmp = tempDir('fixture');
afterAll(tmp.remove);

/** Opens the store on a fresh copy, so the frozen file itself is never touched. */
async function openCopy(name: string) {
  const path = join(tmp.dir, `${name}.db`);
  copyFileSync(FIXTURE, path);
  return { path, store: await sqliteStore({ path }) };
}

const blank = {
  schemaVersion: 1,
  scope: { tenant: 'acme' },
  runId: 'run-v1',
  actor: 'agent',
  attempt: 0,
  status: null,
  executedAt: null,
  inFlightUntil: null,
  acceptedAt: null,
  lastObservedAt: null,
  nextPollAt: null,
  reads: 0,
  providerRef: null,
  baseline: null,
  completion: null,
  leaseOwner: null,
  leaseToken: null,
  leaseExpiresAt: null,
} as const;

const RECORDS: OperationRecord[] = [
  {
    ...blank,
    id: 'op-1',
    action: 'ticket.resolve',
    target: 'ticket:T-1',
    fingerprint: 'fp-1',
    idempotencyKey: 'key-1',
    input: { id: 'T-1', status: 'resolved' },
    attempt: 1,
    lifecycle: 'settled',
    status: 'verified',
    requestedAt: T0 + 1,
    updatedAt: T0 + 20,
    executedAt: T0 + 10,
    lastObservedAt: T0 + 20,
    reads: 1,
    baseline: { status: 'open', version: 3 },
    completion: {
      status: 'verified',
      action: 'ticket.resolve',
      target: 'ticket:T-1',
      operationId: 'op-1',
      idempotencyKey: 'key-1',
      attempt: 1,
      postcondition: 'The ticket is resolved.',
      mode: 'committed',
      observedAt: '2023-11-14T22:13:20.020Z',
      evidence: { status: 'resolved', version: 4 },
      checks: [{ name: 'status', pass: true, expected: 'resolved', observed: 'resolved' }],
      nextAllowedAction: 'none',
      safeToRepeat: true,
      message: 'Verified: ticket:T-1 is resolved.',
    },
  },
  {
    ...blank,
    id: 'op-2',
    action: 'email.send',
    target: 'email:ana',
    fingerprint: 'fp-2',
    idempotencyKey: 'key-2',
    input: { to: 'ana@example.com', subject: 'Proposal — v2 ✓' },
    attempt: 1,
    lifecycle: 'running',
    status: 'pending',
    requestedAt: T0 + 2,
    updatedAt: T0 + 1_001,
    executedAt: T0 + 11,
    acceptedAt: T0 + 12,
    lastObservedAt: T0 + 1_001,
    nextPollAt: T0 + 3_000,
    reads: 1,
    providerRef: { messageId: 'msg-42' },
    leaseOwner: 'reconciler-1',
    leaseToken: LEASE_TOKEN,
    leaseExpiresAt: T0 + 31_000,
  },
  {
    ...blank,
    id: 'op-3',
    action: 'ticket.resolve',
    target: 'ticket:T-3',
    scope: { tenant: 'acme', region: 'eu' },
    fingerprint: 'fp-3',
    idempotencyKey: 'key-3',
    actor: null,
    input: { id: 'T-3', status: 'resolved' },
    lifecycle: 'awaiting_approval',
    status: 'pending',
    requestedAt: T0 + 3,
    updatedAt: T0 + 13,
  },
  {
    ...blank,
    id: 'op-4',
    action: 'ticket.resolve',
    target: 'ticket:T-4',
    fingerprint: 'fp-4',
    idempotencyKey: 'key-4',
    input: { id: 'T-4', status: 'resolved' },
    attempt: 1,
    lifecycle: 'timed_out',
    status: 'unknown',
    requestedAt: T0 + 4,
    updatedAt: T0 + 15,
    executedAt: T0 + 14,
    inFlightUntil: T0 + 60_014,
    nextPollAt: T0 + 60_014,
  },
  {
    ...blank,
    id: 'op-5',
    action: 'ticket.resolve',
    target: 'ticket:T-5',
    fingerprint: 'fp-5',
    idempotencyKey: 'key-5',
    input: null,
    lifecycle: 'requested',
    requestedAt: T0 + 5,
    updatedAt: T0 + 5,
  },
];

type Row = [
  seq: number,
  at: number,
  type: string,
  from: string | null,
  to: string | null,
  status: string | null,
  actor: string | null,
  attempt: number,
  detail?: Record<string, unknown>,
];

const LOGS: Record<string, Row[]> = {
  'op-1': [
    [1, T0 + 1, 'reserved', null, 'requested', null, 'agent', 0, { via: 'run' }],
    [2, T0 + 10, 'executing', 'requested', 'executing', null, 'agent', 1],
    [3, T0 + 20, 'settled', 'executing', 'settled', 'verified', 'agent', 1, { checks: 1, passed: 1 }],
  ],
  'op-2': [
    [1, T0 + 2, 'reserved', null, 'requested', null, 'agent', 0],
    [2, T0 + 11, 'executing', 'requested', 'executing', null, 'agent', 1],
    [
      3,
      T0 + 12,
      'accepted',
      'executing',
      'accepted',
      'pending',
      'agent',
      1,
      { providerRef: { messageId: 'msg-42' } },
    ],
    [
      4,
      T0 + 1_000,
      'claimed',
      'accepted',
      'accepted',
      'pending',
      'reconciler-1',
      1,
      { owner: 'reconciler-1', leaseExpiresAt: T0 + 31_000 },
    ],
    [5, T0 + 1_001, 'observed', 'accepted', 'running', 'pending', 'reconciler-1', 1, { terminal: 'running' }],
  ],
  'op-3': [
    [1, T0 + 3, 'reserved', null, 'requested', null, null, 0],
    [
      2,
      T0 + 13,
      'approval_requested',
      'requested',
      'awaiting_approval',
      'pending',
      null,
      0,
      { reason: 'refund over limit' },
    ],
  ],
  'op-4': [
    [1, T0 + 4, 'reserved', null, 'requested', null, 'agent', 0],
    [2, T0 + 14, 'executing', 'requested', 'executing', null, 'agent', 1],
    [
      3,
      T0 + 15,
      'timed_out',
      'executing',
      'timed_out',
      'unknown',
      'agent',
      1,
      { error: 'execute timed out after 5000ms' },
    ],
  ],
  'op-5': [[1, T0 + 5, 'reserved', null, 'requested', null, 'agent', 0]],
};

function expectedEvents(operationId: string): OperationEvent[] {
  return LOGS[operationId]!.map(
    ([seq, at, type, from, to, status, actor, attempt, detail]) =>
      ({
        schemaVersion: 1,
        operationId,
        seq,
        at,
        type,
        from,
        to,
        status,
        actor,
        attempt,
        ...(detail === undefined ? {} : { detail }),
      }) as OperationEvent,
  );
}

describe('the frozen v1 fixture', () => {
  it('is a committed, checkpointed file with no journal beside it', () => {
    const dir = join(import.meta.dirname, '..', 'fixtures', 'sqlite');
    expect(readdirSync(dir).filter((f) => f.startsWith('v1.db'))).toEqual(['v1.db']);
    expect(readFileSync(FIXTURE).subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
  });

  it('loads every record exactly as v1 wrote it', async () => {
    const { store } = await openCopy('records');
    expect(await store.list()).toEqual(RECORDS);
    for (const record of RECORDS) {
      expect(await store.get(record.id)).toEqual(record);
      expect(await store.getByKey(record.idempotencyKey)).toEqual(record);
    }
    await store.close();
  });

  it('loads every event log exactly as v1 wrote it', async () => {
    const { store } = await openCopy('events');
    for (const id of Object.keys(LOGS)) expect(await store.events(id)).toEqual(expectedEvents(id));
    await store.close();
  });

  it('keeps working on v1 records: idempotency, due claims, the old lease and new events', async () => {
    const { store } = await openCopy('continue');
    const again = await store.reserve(
      { ...RECORDS[0]!, id: 'op-new', requestedAt: T0 + 99 },
      { at: T0 + 99, type: 'reserved', from: null, to: null, status: null, actor: 'agent', attempt: 0 },
    );
    expect(again).toEqual({ record: RECORDS[0], created: false });
    // op-2 is due at T0 + 3_000 but its v1 lease is live until T0 + 31_000; op-4 is due at T0 + 60_014.
    expect(await store.claimDue(10, 1_000, 'worker', T0 + 30_999)).toEqual([]);
    const settled = await store.transition(
      'op-2',
      ['running'],
      { lifecycle: 'settled', status: 'verified' },
      {
        at: T0 + 3_000,
        type: 'settled',
        from: null,
        to: null,
        status: 'verified',
        actor: 'reconciler-1',
        attempt: 1,
      },
      { leaseToken: LEASE_TOKEN },
    );
    expect(settled).toEqual({
      ...RECORDS[1],
      lifecycle: 'settled',
      status: 'verified',
      updatedAt: T0 + 3_000,
    });
    expect((await store.events('op-2')).at(-1)).toMatchObject({ seq: 6, from: 'running', to: 'settled' });
    const claims = await store.claimDue(10, 1_000, 'worker', T0 + 60_014);
    expect(claims.map((c) => c.record.id)).toEqual(['op-4']);
    expect((await store.events('op-4')).at(-1)).toMatchObject({ seq: 4, type: 'claimed', actor: 'worker' });
    await store.close();
  });

  it('opens without re-running the migration it already has', async () => {
    const { path, store } = await openCopy('migrations');
    await store.close();
    const db = await openHandle(path);
    const rows = db.prepare('SELECT version, name FROM readback_migrations ORDER BY version').all();
    db.close();
    expect(SQLITE_SCHEMA_VERSION).toBeGreaterThanOrEqual(1);
    expect(rows[0]).toEqual({ version: 1, name: 'operations and events' });
    // The v1 file gains the later steps once, on its first open by newer code.
    expect(rows).toHaveLength(SQLITE_SCHEMA_VERSION);
    expect(rows[1]).toEqual({ version: 2, name: 'due operations by action' });
    expect(rows[2]).toEqual({ version: 3, name: 'one index led by action' });
  });
});
