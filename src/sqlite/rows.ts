import type { Completion, Status } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import { jsonColumn } from '../store/json-copy.js';
import {
  requireEvent,
  requireKnownLifecycle,
  requireStorableText,
  requireUnchangedIdentity,
} from '../store/records.js';
import type {
  Lifecycle,
  NewEvent,
  OperationEvent,
  OperationRecord,
  RecordPatch,
  ReserveStart,
} from '../store/types.js';
import type { SqliteValue } from './driver.js';
import { OPERATION_COLUMN_NAMES } from './sql.js';

/** A row of `readback_operations` as the driver returns it. */
export interface OperationRow {
  id: string;
  schema_version: number | bigint;
  action: string;
  target: string;
  scope: string;
  fingerprint: string;
  idempotency_key: string;
  run_id: string;
  actor: string | null;
  input: string | null;
  attempt: number | bigint;
  lifecycle: string;
  status: string | null;
  requested_at: number | bigint;
  updated_at: number | bigint;
  executed_at: number | bigint | null;
  in_flight_until: number | bigint | null;
  accepted_at: number | bigint | null;
  last_observed_at: number | bigint | null;
  next_poll_at: number | bigint | null;
  reads: number | bigint;
  provider_ref: string | null;
  baseline: string | null;
  completion: string | null;
  lease_owner: string | null;
  lease_token: string | null;
  lease_expires_at: number | bigint | null;
}

type Int = number | bigint;

/** An operation row as an array of its values, in `OPERATION_COLUMN_NAMES` order. */
type OperationValues = readonly [
  id: string,
  schema_version: Int,
  action: string,
  target: string,
  scope: string,
  fingerprint: string,
  idempotency_key: string,
  run_id: string,
  actor: string | null,
  input: string | null,
  attempt: Int,
  lifecycle: string,
  status: string | null,
  requested_at: Int,
  updated_at: Int,
  executed_at: Int | null,
  in_flight_until: Int | null,
  accepted_at: Int | null,
  last_observed_at: Int | null,
  next_poll_at: Int | null,
  reads: Int,
  provider_ref: string | null,
  baseline: string | null,
  completion: string | null,
  lease_owner: string | null,
  lease_token: string | null,
  lease_expires_at: Int | null,
];

/** A row of `readback_events` as the driver returns it. */
export interface EventRow {
  operation_id: string;
  seq: number | bigint;
  schema_version: number | bigint;
  at: number | bigint;
  type: string;
  from_lifecycle: string | null;
  to_lifecycle: string | null;
  status: string | null;
  actor: string | null;
  attempt: number | bigint;
  detail: string | null;
}

/** How each patchable record field is stored: its column, and whether it is JSON or must not be null. */
interface ColumnSpec {
  column: string;
  json?: boolean;
  notNull?: boolean;
}

/**
 * The record fields a transition may write, mapped to columns. `requestedAt` is here although the
 * patch type omits it, because the memory store (the reference) applies it from a spread record.
 */
export const PATCH_COLUMNS: Readonly<Record<keyof RecordPatch | 'requestedAt', ColumnSpec>> = {
  action: { column: 'action', notNull: true },
  target: { column: 'target', notNull: true },
  scope: { column: 'scope', json: true, notNull: true },
  runId: { column: 'run_id', notNull: true },
  actor: { column: 'actor' },
  input: { column: 'input', json: true },
  attempt: { column: 'attempt', notNull: true },
  lifecycle: { column: 'lifecycle', notNull: true },
  status: { column: 'status' },
  requestedAt: { column: 'requested_at', notNull: true },
  updatedAt: { column: 'updated_at', notNull: true },
  executedAt: { column: 'executed_at' },
  inFlightUntil: { column: 'in_flight_until' },
  acceptedAt: { column: 'accepted_at' },
  lastObservedAt: { column: 'last_observed_at' },
  nextPollAt: { column: 'next_poll_at' },
  reads: { column: 'reads', notNull: true },
  providerRef: { column: 'provider_ref', json: true },
  baseline: { column: 'baseline', json: true },
  completion: { column: 'completion', json: true },
  leaseOwner: { column: 'lease_owner' },
  leaseToken: { column: 'lease_token' },
  leaseExpiresAt: { column: 'lease_expires_at' },
};

// Rows are decoded on every read, so the success path stays a bare JSON.parse; only a damaged row (edited by
// hand, or by another program) pays for the message naming the operation and the column.
function fromJson(text: string | null, id: string, column: string): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`operation ${id}: column ${column} does not hold valid JSON (${reason})`, {
      cause: error,
    });
  }
}

// node:sqlite (readBigInts) and better-sqlite3 (safeIntegers) may hand back integers as BigInt.
function num(value: number | bigint): number {
  return typeof value === 'bigint' ? Number(value) : value;
}

function numOrNull(value: number | bigint | null): number | null {
  return value === null ? null : num(value);
}

/** The record fields kept in JSON columns. */
export type JsonField = 'scope' | 'input' | 'providerRef' | 'baseline' | 'completion';

/**
 * The JSON fields a write bound, as their texts hold them (see `jsonColumn`), for the record that write returns:
 * a read of the row gives the same values (SQLite keeps the text; Postgres jsonb keeps the values, though it may
 * order an object's keys differently), so its own columns need no decode. Undefined fields come from the row.
 */
export type BoundJson = Partial<Pick<OperationRecord, JsonField>>;

/** The JSON a write binds, by record field: its text (SQL NULL as null) and the value that text holds. */
export type JsonTexts = [field: JsonField, text: string | null, value: unknown][];

/** The bound JSON fields by name: fresh values, shared with nobody, as a read of the row would give. */
export function boundJson(texts: JsonTexts): BoundJson {
  const bound: BoundJson = {};
  for (const [field, , value] of texts) (bound as Record<JsonField, unknown>)[field] = value;
  return bound;
}

/**
 * Builds the record a row stores; every column is read back, whatever schema version wrote it, except the
 * JSON fields `bound` already holds (decoded from the text the same write bound).
 */
export function recordFromRow(row: OperationRow, bound?: BoundJson): OperationRecord {
  const record = row as unknown as Record<string, unknown>;
  return recordFromValues(
    OPERATION_COLUMN_NAMES.map((column) => record[column]),
    bound,
  );
}

/**
 * `recordFromRow` for a row read as an array of its values in `OPERATION_COLUMN_NAMES` order (what the SQLite
 * store reads: see `prepareArrays`).
 */
export function recordFromValues(values: readonly unknown[], bound?: BoundJson): OperationRecord {
  // Typed as the row's columns: the indexes below are OPERATION_COLUMN_NAMES's, which a test pins.
  const v = values as OperationValues;
  return {
    schemaVersion: num(v[1]),
    id: v[0],
    action: v[2],
    target: v[3],
    scope: bound?.scope ?? (fromJson(v[4], v[0], 'scope') as Record<string, string>),
    fingerprint: v[5],
    idempotencyKey: v[6],
    runId: v[7],
    actor: v[8],
    input: bound?.input ?? fromJson(v[9], v[0], 'input'),
    attempt: num(v[10]),
    lifecycle: v[11] as Lifecycle,
    status: v[12] as Status | null,
    requestedAt: num(v[13]),
    updatedAt: num(v[14]),
    executedAt: numOrNull(v[15]),
    inFlightUntil: numOrNull(v[16]),
    acceptedAt: numOrNull(v[17]),
    lastObservedAt: numOrNull(v[18]),
    nextPollAt: numOrNull(v[19]),
    reads: num(v[20]),
    providerRef: bound?.providerRef ?? fromJson(v[21], v[0], 'provider_ref'),
    baseline: bound?.baseline ?? fromJson(v[22], v[0], 'baseline'),
    completion: bound?.completion ?? (fromJson(v[23], v[0], 'completion') as Completion | null),
    leaseOwner: v[24],
    leaseToken: v[25],
    leaseExpiresAt: numOrNull(v[26]),
  };
}

/**
 * The INSERT parameters for a new record, in `INSERT_OPERATION`'s column order. Takes over `r`: its JSON fields
 * become what their texts hold (see `jsonColumn`), so it is the record the row stores, sharing no object with
 * the caller's, as a read of the row would give (a missing scope is stored as `{}`).
 */
export function recordParams(r: OperationRecord): SqliteValue[] {
  const scope = jsonColumn(r.scope);
  const input = jsonColumn(r.input);
  const providerRef = jsonColumn(r.providerRef);
  const baseline = jsonColumn(r.baseline);
  const completion = jsonColumn(r.completion);
  r.scope = (scope.text === null ? {} : scope.value) as Record<string, string>;
  r.input = input.value;
  r.providerRef = providerRef.value;
  r.baseline = baseline.value;
  r.completion = completion.value as Completion | null;
  return [
    r.id,
    r.schemaVersion,
    r.action,
    r.target,
    scope.text ?? '{}',
    r.fingerprint,
    r.idempotencyKey,
    r.runId,
    r.actor,
    input.text,
    r.attempt,
    r.lifecycle,
    r.status,
    r.requestedAt,
    r.updatedAt,
    r.executedAt,
    r.inFlightUntil,
    r.acceptedAt,
    r.lastObservedAt,
    r.nextPollAt,
    r.reads,
    providerRef.text,
    baseline.text,
    completion.text,
    r.leaseOwner,
    r.leaseToken,
    r.leaseExpiresAt,
  ];
}

/**
 * Turns a patch into column assignments, skipping undefined ("not given") and unknown keys, and the
 * field named by `omit` (which the caller binds itself); `json` lists the JSON texts it binds, if any.
 * Text it cannot store as given is refused (see `requireStorableText`; `nul` for PostgreSQL).
 */
export function patchAssignments(
  patch: RecordPatch,
  omit?: keyof RecordPatch,
  nul = false,
): { columns: string[]; values: SqliteValue[]; json: JsonTexts | undefined } {
  const columns: string[] = [];
  const values: SqliteValue[] = [];
  let json: JsonTexts | undefined;
  // Object.keys and indexed reads rather than Object.entries: no pair array per field, on every write.
  for (const field of Object.keys(patch)) {
    if (field === omit) continue;
    const value = (patch as Record<string, unknown>)[field];
    const spec = checkedPatchField(field, value, nul);
    if (spec === undefined) continue;
    columns.push(spec.column);
    if (spec.json) {
      const column = jsonColumn(value);
      values.push(column.text);
      json ??= [];
      json.push([field as JsonField, column.text, column.value]);
    } else {
      values.push(value as SqliteValue);
    }
  }
  return { columns, values, json };
}

/**
 * The column a patch field is written to, after the checks every write makes (no null where the column needs a
 * value; text outside JSON that the database can store, see `requireStorableText`); undefined for a field that
 * is not written (undefined, "not given", or not a record field).
 */
function checkedPatchField(field: string, value: unknown, nul: boolean): ColumnSpec | undefined {
  if (value === undefined || !Object.hasOwn(PATCH_COLUMNS, field)) return undefined;
  const spec = PATCH_COLUMNS[field as keyof typeof PATCH_COLUMNS];
  if (value === null && spec.notNull) {
    throw new ReadbackError('invalid_options', 'must not be null', `patch.${field}`);
  }
  if (!spec.json && typeof value === 'string') requireStorableText(value, `patch.${field}`, nul);
  // SQLite binds NaN as NULL (a record never due again) and Postgres refuses it with a bare cast error.
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new ReadbackError('invalid_options', 'must be a finite number', `patch.${field}`);
  }
  return spec;
}

/**
 * Applies a reserve's `start` to the record it creates, as a transition from `requested` would: the same checks
 * (a known lifecycle, no null where a column needs a value, storable text, identity fields unchanged; `nul` as
 * in `patchAssignments`), the given fields set, `updatedAt` from the patch or the event. Throws before anything
 * is written, so a refused start leaves no record.
 */
export function applyStart(record: OperationRecord, { patch, event }: ReserveStart, nul = false): void {
  requireEvent(event, nul);
  requireKnownLifecycle(patch);
  requireUnchangedIdentity(patch, record);
  // Checked as a transition's patch is; JSON fields are encoded later, with the record's own. The record is
  // this reserve's own, so a field refused halfway leaves nothing behind.
  const fields = record as unknown as Record<string, unknown>;
  for (const field of Object.keys(patch)) {
    if (field === 'updatedAt') continue;
    const value = (patch as Record<string, unknown>)[field];
    if (checkedPatchField(field, value, nul) !== undefined) fields[field] = value;
  }
  record.updatedAt = patch.updatedAt ?? event.at;
}

/** Builds the event a row stores; `detail` is present only when the writer gave one, as in the memory store. */
export function eventFromRow(row: EventRow): OperationEvent {
  const event: OperationEvent = {
    schemaVersion: num(row.schema_version),
    operationId: row.operation_id,
    seq: num(row.seq),
    at: num(row.at),
    type: row.type,
    from: row.from_lifecycle as Lifecycle | null,
    to: row.to_lifecycle as Lifecycle | null,
    status: row.status as Status | null,
    actor: row.actor,
    attempt: num(row.attempt),
  };
  if (row.detail !== null)
    event.detail = fromJson(row.detail, row.operation_id, 'readback_events.detail') as Record<
      string,
      unknown
    >;
  return event;
}

/** The INSERT parameters for an event, in `INSERT_EVENT`'s order; the store supplies from/to and the version. */
export function eventParams(
  operationId: string,
  schemaVersion: number,
  event: NewEvent,
  from: Lifecycle | null,
  to: Lifecycle | null,
): SqliteValue[] {
  // `detail` keeps SQL NULL for "absent" so a given `null` (JSON 'null') still reads back as given.
  const detail = event.detail === undefined ? null : (JSON.stringify(event.detail) ?? null);
  return [
    operationId,
    operationId,
    schemaVersion,
    event.at,
    event.type,
    from,
    to,
    event.status ?? null,
    event.actor ?? null,
    event.attempt,
    detail,
  ];
}
