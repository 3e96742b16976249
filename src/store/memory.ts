import { randomUUID } from 'node:crypto';
import { clonePlain } from '../canonical.js';
import { ReadbackError } from '../errors.js';
import { jsonCopy, setOwnField } from './json-copy.js';
import {
  newRecord,
  pruneLimit,
  requireClaimArgs,
  requireFiniteNumbers,
  requireKnownLifecycle,
  requirePositiveInt,
  requireRenewArgs,
  requireString,
  requireTime,
  requireUnchangedIdentity,
} from './records.js';
import {
  type Claim,
  type Lifecycle,
  type ListFilter,
  type NewEvent,
  type NewOperation,
  type OperationEvent,
  type OperationRecord,
  type OperationStore,
  RECORD_SCHEMA_VERSION,
  type RecordPatch,
  type ReserveStart,
  type TransitionGuard,
} from './types.js';

interface Entry {
  record: OperationRecord;
  events: OperationEvent[];
}

/** An in-process `OperationStore` for tests and single-process use; it holds the contract every backend passes. */
export function memoryStore(): OperationStore {
  const byId = new Map<string, Entry>();
  const idByKey = new Map<string, string>();
  let closed = false;

  // Every method body runs synchronously after this check, so each call is atomic in one event loop.
  const open = (method: string) => {
    if (closed) throw new ReadbackError('store_closed', `memory store is closed; cannot ${method}`);
  };

  const append = (entry: Entry, event: NewEvent, from: Lifecycle | null, to: Lifecycle | null) => {
    // Built field by field (one object shape for every event) rather than spread from the caller's
    // object, whose shapes vary: the spread was the costliest line of a memory-store write.
    const stored: OperationEvent = {
      schemaVersion: RECORD_SCHEMA_VERSION,
      operationId: entry.record.id,
      seq: entry.events.length + 1,
      at: event.at,
      type: event.type,
      from,
      to,
      status: event.status,
      actor: event.actor,
      attempt: event.attempt,
    };
    // As a JSON column keeps it: an undefined detail is absent, as in the durable stores.
    if (event.detail !== undefined) stored.detail = jsonCopy(event.detail) as Record<string, unknown>;
    entry.events.push(stored);
  };

  // The compare-and-set of a transition on one entry: the new record, or null when it did not match.
  const apply = (
    entry: Entry,
    from: readonly Lifecycle[],
    patch: RecordPatch,
    event: NewEvent,
    guard: TransitionGuard,
  ): OperationRecord | null => {
    const current = entry.record;
    requireUnchangedIdentity(patch, current);
    // Settled is terminal: nothing may rewrite an honest final status.
    if (current.lifecycle === 'settled' || !from.includes(current.lifecycle)) return null;
    if (guard.leaseToken !== undefined && current.leaseToken !== guard.leaseToken) return null;
    if (guard.attempt !== undefined && current.attempt !== guard.attempt) return null;
    if (guard.status !== undefined && current.status !== guard.status) return null;

    // An explicit `undefined` in a patch means "not given", as it would for an omitted column.
    const changed: Record<string, unknown> = { ...current };
    for (const key of Object.keys(patch)) {
      const value = (patch as Record<string, unknown>)[key];
      if (value !== undefined)
        setOwnField(changed, key, JSON_FIELDS.has(key) ? (jsonCopy(value) ?? null) : clonePlain(value));
    }
    const next = changed as unknown as OperationRecord;
    next.id = current.id;
    next.schemaVersion = current.schemaVersion;
    next.idempotencyKey = current.idempotencyKey;
    next.fingerprint = current.fingerprint;
    next.updatedAt = patch.updatedAt ?? event.at;
    entry.record = next;
    append(entry, event, current.lifecycle, next.lifecycle);
    return next;
  };

  return {
    async reserve(op: NewOperation, event: NewEvent, start?: ReserveStart) {
      open('reserve');
      requireString(op.id, 'op.id');
      requireString(op.idempotencyKey, 'op.idempotencyKey');
      requireTime(op.requestedAt, 'op.requestedAt');
      requireFiniteNumbers(op, 'op');
      requireTime(event.at, 'event.at');
      if (start) {
        requireTime(start.event.at, 'start.event.at');
        requireKnownLifecycle(start.patch);
        requireFiniteNumbers(start.patch, 'patch');
      }

      const existingId = idByKey.get(op.idempotencyKey);
      if (existingId !== undefined) {
        return { record: copyRecord(byId.get(existingId)!.record), created: false };
      }
      if (byId.has(op.id)) {
        throw new ReadbackError(
          'store_conflict',
          `operation ${op.id} already exists under a different idempotency key`,
          'op.id',
        );
      }

      const record = newRecord({
        ...op,
        scope: jsonCopy(op.scope) as Record<string, string>,
        input: jsonCopy(op.input) ?? null,
      });
      const entry: Entry = { record, events: [] };
      append(entry, event, null, 'requested');
      // The start is checked (identity fields) before anything is kept, so a refused one leaves no record.
      if (start) apply(entry, ['requested'], start.patch, start.event, { attempt: 0 });
      byId.set(record.id, entry);
      idByKey.set(record.idempotencyKey, record.id);
      return { record: copyRecord(entry.record), created: true };
    },

    async transition(id, from, patch, event, guard = {}) {
      open('transition');
      requireTime(event.at, 'event.at');
      requireKnownLifecycle(patch);
      requireFiniteNumbers(patch, 'patch');
      const entry = byId.get(id);
      if (!entry) return null;
      const next = apply(entry, from, patch, event, guard);
      return next === null ? null : copyRecord(next);
    },

    async get(id) {
      open('get');
      const entry = byId.get(id);
      return entry ? copyRecord(entry.record) : null;
    },

    async getByKey(idempotencyKey) {
      open('getByKey');
      const id = idByKey.get(idempotencyKey);
      return id === undefined ? null : copyRecord(byId.get(id)!.record);
    },

    async events(id) {
      open('events');
      return clonePlain(byId.get(id)?.events ?? []);
    },

    async list(filter: ListFilter = {}) {
      open('list');
      if (filter.limit !== undefined) requirePositiveInt(filter.limit, 'filter.limit');
      if (filter.dueBefore !== undefined) requireTime(filter.dueBefore, 'filter.dueBefore');
      const lifecycles =
        filter.lifecycle === undefined
          ? undefined
          : Array.isArray(filter.lifecycle)
            ? filter.lifecycle
            : [filter.lifecycle];
      const due = filter.dueBefore;
      const matches = [...byId.values()]
        .map((e) => e.record)
        .filter(
          (r) =>
            (filter.status === undefined || r.status === filter.status) &&
            (lifecycles === undefined || lifecycles.includes(r.lifecycle)) &&
            (filter.action === undefined || r.action === filter.action) &&
            (filter.runId === undefined || r.runId === filter.runId) &&
            (due === undefined || (r.nextPollAt !== null && r.nextPollAt <= due)),
        )
        .sort((a, b) => a.requestedAt - b.requestedAt || compareIds(a.id, b.id));
      return clonePlain(filter.limit === undefined ? matches : matches.slice(0, filter.limit));
    },

    async claimDue(limit, leaseMs, owner, now, options) {
      open('claimDue');
      const actions = requireClaimArgs(limit, leaseMs, owner, now, options);

      const due = [...byId.values()]
        .filter(({ record: r }) => {
          if (r.lifecycle === 'settled' || r.lifecycle === 'awaiting_approval') return false;
          if (actions !== undefined && !actions.includes(r.action)) return false;
          if (r.nextPollAt === null || r.nextPollAt > now) return false;
          return r.leaseExpiresAt === null || r.leaseExpiresAt <= now;
        })
        .sort(
          (a, b) =>
            a.record.nextPollAt! - b.record.nextPollAt! ||
            a.record.requestedAt - b.record.requestedAt ||
            compareIds(a.record.id, b.record.id),
        )
        .slice(0, limit);

      return due.map((entry): Claim => {
        const leaseToken = randomUUID();
        const leaseExpiresAt = now + leaseMs;
        const r = entry.record;
        entry.record = { ...r, leaseOwner: owner, leaseToken, leaseExpiresAt, updatedAt: now };
        // The token is a write capability, so the log names the owner but never the token.
        append(
          entry,
          {
            at: now,
            type: 'claimed',
            from: r.lifecycle,
            to: r.lifecycle,
            status: r.status,
            actor: owner,
            attempt: r.attempt,
            detail: { owner, leaseExpiresAt },
          },
          r.lifecycle,
          r.lifecycle,
        );
        return { record: copyRecord(entry.record), leaseToken, leaseExpiresAt };
      });
    },

    async renewLease(id, leaseToken, leaseMs, now) {
      open('renewLease');
      requireRenewArgs(id, leaseToken, leaseMs, now);
      const entry = byId.get(id);
      const r = entry?.record;
      if (!entry || !r || r.lifecycle === 'settled' || r.leaseToken !== leaseToken) return null;
      const leaseExpiresAt = Math.max(r.leaseExpiresAt ?? now + leaseMs, now + leaseMs);
      entry.record = { ...r, leaseExpiresAt };
      return leaseExpiresAt;
    },

    async prune(options) {
      open('prune');
      const limit = pruneLimit(options);
      const before = options.settledBefore;
      let deleted = 0;
      // Map order is insertion order: the oldest operations are looked at first, as the durable stores do.
      for (const [id, { record }] of byId) {
        if (deleted === limit) break;
        if (record.lifecycle !== 'settled' || !(record.updatedAt < before && record.requestedAt < before))
          continue;
        byId.delete(id);
        idByKey.delete(record.idempotencyKey);
        deleted++;
      }
      return deleted;
    },

    async close() {
      // Closing twice is harmless, so shutdown paths need no bookkeeping of their own.
      closed = true;
    },
  };
}

/**
 * A deep copy of a record: one spread copies its plain fields, and only the fields holding objects
 * (scope, input, completion, …) are cloned; several times cheaper than a generic deep copy, and the
 * memory store copies a record on every call.
 */
function copyRecord(r: OperationRecord): OperationRecord {
  const copy = { ...r } as Record<string, unknown>;
  for (const key of Object.keys(copy)) {
    const value = copy[key];
    if (value !== null && typeof value === 'object') setOwnField(copy, key, clonePlain(value));
  }
  return copy as unknown as OperationRecord;
}

// The record fields the durable stores keep in JSON columns.
const JSON_FIELDS = new Set(['scope', 'input', 'providerRef', 'baseline', 'completion']);

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
