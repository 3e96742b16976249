import { ReadbackError } from '../errors.js';
import {
  type ClaimOptions,
  DEFAULT_PRUNE_LIMIT,
  type Lifecycle,
  type ListFilter,
  MAX_PRUNE_LIMIT,
  type NewEvent,
  type NewOperation,
  OPEN_LIFECYCLES,
  type OperationRecord,
  type PruneOptions,
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

// The record's number fields: a NaN or an infinity in one would be kept by one store, stored as NULL by another
// (never due again) and refused by a third, so every store refuses it up front, naming the field.
const NUMBER_FIELDS = [
  'attempt',
  'reads',
  'executedAt',
  'inFlightUntil',
  'acceptedAt',
  'lastObservedAt',
  'nextPollAt',
  'leaseExpiresAt',
  'updatedAt',
] as const;

/** Refuses a number field of a patch or a new operation (`where` names it) that is NaN or infinite. */
export function requireFiniteNumbers(fields: object, where: string): void {
  const given = fields as Record<string, unknown>;
  for (const field of NUMBER_FIELDS) {
    const value = given[field];
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw new ReadbackError('invalid_options', 'must be a finite number', `${where}.${field}`);
    }
  }
}

/** Refuses anything but a whole number above zero. */
export function requirePositiveInt(value: unknown, field: string): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw new ReadbackError('invalid_options', 'must be a positive integer', field);
  }
}

/**
 * Checks an event as every database backend needs it: a time, a type and an attempt, and text its
 * columns can hold (see `requireStorableText`; `nul` for a database whose text refuses NUL).
 */
export function requireEvent(event: NewEvent, nul = false): void {
  requireTime(event.at, 'event.at');
  requireString(event.type, 'event.type');
  if (typeof event.attempt !== 'number' || !Number.isFinite(event.attempt)) {
    throw new ReadbackError('invalid_options', 'must be a finite number', 'event.attempt');
  }
  requireStorableText(event.type, 'event.type', nul);
  requireStorableText(event.actor, 'event.actor', nul);
  requireStorableText(event.status, 'event.status', nul);
}

// String.prototype.isWellFormed (Node 20+) is newer than the ES2023 library this package compiles against.
const wellFormed = (text: string) => (text as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * Refuses text a database text column would not keep as given, before anything is written: an unpaired
 * UTF-16 surrogate (SQLite and PostgreSQL store replacement characters instead, so two distinct
 * idempotency keys could become one, and a record would name another target), and, when `nul` is set,
 * the NUL character, which PostgreSQL text cannot hold. Non-strings are left to the other checks.
 */
export function requireStorableText(value: unknown, field: string, nul = false): void {
  if (typeof value !== 'string' || storableText(value, nul)) return;
  if (!wellFormed(value)) {
    throw new ReadbackError(
      'unstorable_value',
      'holds an unpaired UTF-16 surrogate (a broken character), which the database cannot store as given',
      field,
    );
  }
  throw new ReadbackError(
    'unstorable_value',
    'holds a NUL character (\\u0000), which this database cannot store as given',
    field,
  );
}

/**
 * Whether a text column can hold `text` as given (see `requireStorableText`). A lookup by text that
 * cannot be stored finds nothing, without asking a database that would fold it into other text or refuse it.
 */
export function storableText(text: string, nul = false): boolean {
  return wellFormed(text) && !(nul && text.includes('\0'));
}

/** Checks that every text column of a new operation can be stored as given (see `requireStorableText`). */
export function requireStorableOperation(op: NewOperation, nul = false): void {
  requireFiniteNumbers(op, 'op');
  requireStorableText(op.id, 'op.id', nul);
  requireStorableText(op.idempotencyKey, 'op.idempotencyKey', nul);
  requireStorableText(op.action, 'op.action', nul);
  requireStorableText(op.target, 'op.target', nul);
  requireStorableText(op.fingerprint, 'op.fingerprint', nul);
  requireStorableText(op.runId, 'op.runId', nul);
  requireStorableText(op.actor, 'op.actor', nul);
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

/** A claim naming at most this many distinct actions walks each of them on its own index, in both SQL stores. */
export const MAX_CLAIM_ACTIONS = 16;

/**
 * The distinct actions a claim names, when there are 1 to MAX_CLAIM_ACTIONS of them, for the SQL stores to walk
 * one by one on their own index; undefined for any action, none, or many (one walk of all due operations).
 */
export function actionsToWalk(actions: readonly string[] | undefined): string[] | undefined {
  if (actions === undefined) return undefined;
  const named = [...new Set(actions)];
  return named.length > 0 && named.length <= MAX_CLAIM_ACTIONS ? named : undefined;
}

/**
 * Checks `claimDue` arguments the same way in every backend; returns the action names to claim, or undefined
 * for any action.
 */
export function requireClaimArgs(
  limit: number,
  leaseMs: number,
  owner: string,
  now: number,
  options: ClaimOptions | undefined,
): readonly string[] | undefined {
  requirePositiveInt(limit, 'limit');
  if (typeof leaseMs !== 'number' || !Number.isFinite(leaseMs) || leaseMs <= 0) {
    throw new ReadbackError('invalid_options', 'must be a positive number of milliseconds', 'leaseMs');
  }
  requireString(owner, 'owner');
  requireTime(now, 'now');
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null) {
    throw new ReadbackError('invalid_options', 'expected { actions? }', 'options');
  }
  const { actions } = options;
  if (actions === undefined) return undefined;
  if (!Array.isArray(actions)) {
    throw new ReadbackError('invalid_options', 'expected an array of action names', 'options.actions');
  }
  for (let i = 0; i < actions.length; i++) requireString(actions[i], `options.actions[${i}]`);
  // A name no store could hold as given matches no record (see `storableText`): it is left out of the query.
  return actions.filter((name) => storableText(name, true));
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

/** Refuses a patch that would change an identity field of `record` (the type forbids them; a spread record can carry them). */
export function requireUnchangedIdentity(
  patch: RecordPatch,
  record: Pick<OperationRecord, (typeof IDENTITY_FIELDS)[number]>,
): void {
  for (const field of IDENTITY_FIELDS) {
    const value = (patch as Partial<OperationRecord>)[field];
    if (value !== undefined && value !== record[field]) {
      throw new ReadbackError('store_conflict', `a transition cannot change ${field}`, `patch.${field}`);
    }
  }
}

/** Checks `prune`'s options; resolves the limit (the default when absent), for every store alike. */
export function pruneLimit(options: PruneOptions): number {
  if (typeof options !== 'object' || options === null) {
    throw new ReadbackError('invalid_options', 'must be an object with settledBefore', 'options');
  }
  requireTime(options.settledBefore, 'options.settledBefore');
  const limit = options.limit ?? DEFAULT_PRUNE_LIMIT;
  requirePositiveInt(limit, 'options.limit');
  if (limit > MAX_PRUNE_LIMIT) {
    throw new ReadbackError('invalid_options', `must be at most ${MAX_PRUNE_LIMIT}`, 'options.limit');
  }
  return limit;
}

/**
 * Plain data with every string (value or key) no readback store could hold as given (see `storableText`,
 * with NUL refused) replaced by a marked rendering that keeps its characters as JSON escapes; `found`
 * receives the path of each one. Returns `value` itself when nothing needed replacing. For caller data an
 * effect already produced (evidence, a provider's reference): better kept escaped than not kept at all.
 */
export function storableCopy(value: unknown, path: string, found: string[]): unknown {
  if (typeof value === 'string') {
    if (storableText(value, true)) return value;
    found.push(path);
    return renderUnstorable(value);
  }
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const next = storableCopy(item, `${path}[${i}]`, found);
      if (next === item) continue;
      copy ??= value.slice();
      copy[i] = next;
    }
    return copy ?? value;
  }
  const kept: [string, unknown][] = [];
  const renamed: [string, unknown][] = [];
  let changed = false;
  for (const key of Object.keys(value)) {
    const item: unknown = (value as Record<string, unknown>)[key];
    const keyFits = storableText(key, true);
    const name = keyFits ? key : renderUnstorable(key);
    if (!keyFits) found.push(`${path}.${name}`);
    const next = storableCopy(item, `${path}.${name}`, found);
    changed ||= !keyFits || next !== item;
    (keyFits ? kept : renamed).push([name, next]);
  }
  if (!changed) return value;
  const copy: Record<string, unknown> = {};
  for (const [name, item] of [...kept, ...renamed]) {
    let key = name;
    // A rendered key equal to a key the object already has must not overwrite it.
    while (Object.hasOwn(copy, key)) key = `${key}'`;
    // defineProperty: a key named "__proto__" stays an own key, as JSON.parse would give it.
    Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
  }
  return copy;
}

/** The marked, storable form of text a store refused: its JSON literal, where NUL and broken halves are escapes. */
export function renderUnstorable(text: string): string {
  return `[unstorable text: ${JSON.stringify(text)}]`;
}

/**
 * Whether a `list` filter names text no stored record can hold (see `storableText`), so it matches nothing;
 * asked as given, PostgreSQL refuses the whole query over a NUL instead of answering "none".
 */
export function unmatchableFilter(filter: ListFilter, nul = false): boolean {
  for (const text of [filter.action, filter.runId, filter.status, ...[filter.lifecycle ?? []].flat()]) {
    if (typeof text === 'string' && !storableText(text, nul)) return true;
  }
  return false;
}

/**
 * Whether a store's error is a refusal of misuse (a bad argument, a closed store) to surface as a bug, rather
 * than a failure to write (down, busy, a conflicting writer, a value it cannot keep) that callers answer honestly.
 */
export function isStoreMisuse(error: unknown): boolean {
  return (
    error instanceof ReadbackError && error.code !== 'store_conflict' && error.code !== 'unstorable_value'
  );
}
