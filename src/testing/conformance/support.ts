import { strict as assert } from 'node:assert';
import {
  type Lifecycle,
  type NewEvent,
  type NewOperation,
  OPEN_LIFECYCLES,
  type OperationStore,
} from '../../store/types.js';

/** One named check: a body run against a fresh store. */
export type CaseBody = [name: string, body: (store: OperationStore) => Promise<void>];

export type Patch = Parameters<OperationStore['transition']>[2];

export const T0 = 1_700_000_000_000;
export const ALL: Lifecycle[] = [...OPEN_LIFECYCLES, 'settled'];

export function newOp(n: string | number, overrides: Partial<NewOperation> = {}): NewOperation {
  return {
    id: `op-${n}`,
    action: 'ticket.resolve',
    target: `ticket:T-${n}`,
    scope: { tenant: 'acme' },
    fingerprint: `fp-${n}`,
    idempotencyKey: `key-${n}`,
    runId: 'run-1',
    actor: 'agent',
    input: { id: `T-${n}`, status: 'resolved', tags: ['billing'] },
    requestedAt: T0,
    ...overrides,
  };
}

export function ev(type: string, at = T0, extra: Partial<NewEvent> = {}): NewEvent {
  return { at, type, from: null, to: null, status: null, actor: 'agent', attempt: 0, ...extra };
}

export async function reserve(
  store: OperationStore,
  n: string | number,
  overrides: Partial<NewOperation> = {},
) {
  const { record, created } = await store.reserve(newOp(n, overrides), ev('reserved', overrides.requestedAt));
  assert.equal(created, true, `reserve ${n} should create a record`);
  return record;
}

/** Moves a record into `lifecycle` from wherever it is, asserting the move applied. */
export async function move(
  store: OperationStore,
  id: string,
  lifecycle: Lifecycle,
  at: number,
  patch: Patch = {},
) {
  const record = await store.transition(id, ALL, { lifecycle, ...patch }, ev(lifecycle, at));
  assert.ok(record, `transition of ${id} to ${lifecycle} should apply`);
  return record;
}

export async function rejectsWith(call: () => Promise<unknown>, code: string, what: string): Promise<void> {
  await assert.rejects(call, (error: unknown) => {
    const e = error as { name?: unknown; code?: unknown };
    assert.equal(e.name, 'ReadbackError', `${what}: expected a ReadbackError, got ${String(error)}`);
    assert.equal(e.code, code, `${what}: wrong error code`);
    return true;
  });
}
