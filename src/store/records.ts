import { ReadbackError } from '../errors.js';
import {
  type Lifecycle,
  type NewEvent,
  type NewOperation,
  OPEN_LIFECYCLES,
  type OperationRecord,
  RECORD_SCHEMA_VERSION,
  type RecordPatch,
} from './types.js';

/** Every lifecycle, open ones first. */
export const LIFECYCLES: readonly Lifecycle[] = [...OPEN_LIFECYCLES, 'settled'];

/** Fields no transition may change: they are the record's identity. */
export const IDENTITY_FIELDS = ['id', 'idempotencyKey', 'fingerprint', 'schemaVersion'] as const;

/** The record every backend creates on reserve, so all of them start an operation identically. */
export function newRecord(op: NewOperation): OperationRecord {
  return {
    schemaVersion: RECORD_SCHEMA_VERSION,
    id: op.id,
    action: op.action,
    target: op.target,
    scope: op.scope,
    fingerprint: op.fingerprint,
    idempotencyKey: op.idempotencyKey,
    runId: op.runId,
    actor: op.actor ?? null,
    input: op.input,
    attempt: 0,
    lifecycle: 'requested',
    status: null,
    requestedAt: op.requestedAt,
    updatedAt: op.requestedAt,
    executedAt: null,
    inFlightUntil: null,
    acceptedAt: null,
    lastObservedAt: null,
    nextPollAt: op.nextPollAt ?? null,
    reads: 0,
    providerRef: null,
    baseline: null,
    completion: null,
    leaseOwner: null,
    leaseToken: null,
    leaseExpiresAt: null,
  };
}

/** Refuses anything but a non-empty string. */
export function requireString(value: unknown, field: string): void {
  if (typeof value !== 'string' || value.length === 0) {
    throw new ReadbackError('invalid_options', 'must be a non-empty string', field);
  }
}

/** Refuses anything but a finite number of milliseconds. */
export function requireTime(value: unknown, field: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new ReadbackError('invalid_options', 'must be a finite number of milliseconds', field);
  }
}

/** Refuses anything but a whole number above zero. */
export function requirePositiveInt(value: unknown, field: string): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new ReadbackError('invalid_options', 'must be a positive integer', field);
  }
}

/** Checks an event as every backend needs it: a time, a type and an attempt. */
export function requireEvent(event: NewEvent): void {
  requireTime(event.at, 'event.at');
  requireString(event.type, 'event.type');
  if (typeof event.attempt !== 'number' || !Number.isFinite(event.attempt)) {
    throw new ReadbackError('invalid_options', 'must be a finite number', 'event.attempt');
  }
}

/** Refuses a patch that names a lifecycle that does not exist. */
export function requireKnownLifecycle(patch: RecordPatch): void {
  if (patch.lifecycle !== undefined && !LIFECYCLES.includes(patch.lifecycle)) {
    throw new ReadbackError(
      'invalid_options',
      `unknown lifecycle "${String(patch.lifecycle)}"`,
      'patch.lifecycle',
    );
  }
}

/** Checks `claimDue` arguments the same way in every backend. */
export function requireClaimArgs(limit: number, leaseMs: number, owner: string, now: number): void {
  requirePositiveInt(limit, 'limit');
  if (typeof leaseMs !== 'number' || !Number.isFinite(leaseMs) || leaseMs <= 0) {
    throw new ReadbackError('invalid_options', 'must be a positive number of milliseconds', 'leaseMs');
  }
  requireString(owner, 'owner');
  requireTime(now, 'now');
}

/** Checks `renewLease` arguments the same way in every backend. */
export function requireRenewArgs(id: string, leaseToken: string, leaseMs: number, now: number): void {
  requireString(id, 'id');
  requireString(leaseToken, 'leaseToken');
  if (typeof leaseMs !== 'number' || !Number.isFinite(leaseMs) || leaseMs <= 0) {
    throw new ReadbackError('invalid_options', 'must be a positive number of milliseconds', 'leaseMs');
  }
  requireTime(now, 'now');
}
