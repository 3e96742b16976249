import type { Completion, Status } from '../contract/types.js';

/** Where an operation is in its life; transitions are compare-and-set on this field. */
export type Lifecycle =
  | 'requested'
  | 'awaiting_approval'
  | 'executing'
  | 'accepted'
  | 'running'
  | 'timed_out'
  | 'settled';

/** Lifecycles from which an operation can still move. */
export const OPEN_LIFECYCLES: readonly Lifecycle[] = [
  'requested',
  'awaiting_approval',
  'executing',
  'accepted',
  'running',
  'timed_out',
];

/** The schema version written into every record and event. */
export const RECORD_SCHEMA_VERSION = 1;

/** The durable record of one logical request, written before execute runs. */
export interface OperationRecord {
  schemaVersion: number;
  id: string;
  action: string;
  target: string;
  scope: Record<string, string>;
  fingerprint: string;
  idempotencyKey: string;
  runId: string;
  actor: string | null;
  /** The validated input, kept so the operation can be observed again after a restart. */
  input: unknown;
  attempt: number;
  lifecycle: Lifecycle;
  status: Status | null;
  requestedAt: number;
  updatedAt: number;
  /** When the first execute of the current attempt began; the settlement window counts from here. */
  executedAt: number | null;
  /** After an ambiguous attempt (throw/timeout): until when the lost request could still land. */
  inFlightUntil: number | null;
  /** When accepted work was acknowledged; the poll budget counts from here. */
  acceptedAt: number | null;
  lastObservedAt: number | null;
  nextPollAt: number | null;
  reads: number;
  /** The provider's reference for accepted work (job id, message id). */
  providerRef: unknown;
  /** The baseline read taken before execute (null when the target was absent or no baseline is declared). */
  baseline: unknown;
  /** The latest completion decided for this operation. */
  completion: Completion | null;
  leaseOwner: string | null;
  leaseToken: string | null;
  leaseExpiresAt: number | null;
}

/** The fields a caller supplies to reserve a new operation. */
export type NewOperation = Pick<
  OperationRecord,
  'id' | 'action' | 'target' | 'scope' | 'fingerprint' | 'idempotencyKey' | 'runId' | 'actor' | 'input'
> & {
  requestedAt: number;
  /** When a reconciler may pick the record up if its run dies before moving it on (null: never). */
  nextPollAt?: number | null;
};

/** One entry of an operation's append-only event log. */
export interface OperationEvent {
  schemaVersion: number;
  operationId: string;
  /** Position in the operation's log, from 1, assigned by the store. */
  seq: number;
  at: number;
  type: string;
  from: Lifecycle | null;
  to: Lifecycle | null;
  status: Status | null;
  actor: string | null;
  attempt: number;
  detail?: Record<string, unknown>;
}

/** An event as the caller describes it; the store assigns sequence and schema version. */
export type NewEvent = Omit<OperationEvent, 'seq' | 'schemaVersion' | 'operationId'>;

/** Filter for `list`: every given field must match. */
export interface ListFilter {
  status?: Status | null;
  lifecycle?: Lifecycle | Lifecycle[];
  action?: string;
  runId?: string;
  /** Only records whose `nextPollAt` is at or before this time. */
  dueBefore?: number;
  limit?: number;
}

/** A leased operation; the token must accompany any write made under the lease. */
export interface Claim {
  record: OperationRecord;
  leaseToken: string;
  leaseExpiresAt: number;
}

/** The fields a transition may change. */
export type RecordPatch = Partial<
  Omit<OperationRecord, 'id' | 'schemaVersion' | 'idempotencyKey' | 'fingerprint' | 'requestedAt'>
>;

/** What `claimDue` may take besides due-ness and leases. */
export interface ClaimOptions {
  /**
   * Only operations of these action names are claimed (default: any). A reconciler passes the actions it can
   * drive, so one that does not know an action never holds its operations under a lease.
   */
  actions?: readonly string[];
}

/** Extra compare-and-set conditions: the lease token held, and the attempt and status the writer saw. */
export interface TransitionGuard {
  leaseToken?: string;
  attempt?: number;
  /**
   * The status the writer saw (null included). A record can return to a lifecycle it had (an approval puts it
   * back to `requested`), so the lifecycle alone cannot tell a writer that the record moved on and came back.
   */
  status?: Status | null;
}

/** A transition a reserve may apply to the record it creates, as `transition(id, ['requested'], …)` would. */
export interface ReserveStart {
  patch: RecordPatch;
  event: NewEvent;
}

/** The persistence seam: memory, SQLite and Postgres implement it and pass one conformance suite. */
export interface OperationStore {
  /**
   * Creates the record, or returns the existing one with the same idempotency key (`created: false`). With
   * `start`, a store may also apply that first transition (from `requested`, at attempt 0) to the record it
   * creates, in the same atomic write: one commit instead of two. The record returned shows whether it did; a
   * store that does not (or a record found, not created) leaves the caller to make the transition itself.
   */
  reserve(
    op: NewOperation,
    event: NewEvent,
    start?: ReserveStart,
  ): Promise<{ record: OperationRecord; created: boolean }>;
  /**
   * Applies `patch` only when the record's lifecycle is in `from` and every `guard` field matches;
   * resolves to the updated record, or null when the compare-and-set did not match.
   */
  transition(
    id: string,
    from: readonly Lifecycle[],
    patch: RecordPatch,
    event: NewEvent,
    guard?: TransitionGuard,
  ): Promise<OperationRecord | null>;
  get(id: string): Promise<OperationRecord | null>;
  getByKey(idempotencyKey: string): Promise<OperationRecord | null>;
  events(id: string): Promise<OperationEvent[]>;
  list(filter?: ListFilter): Promise<OperationRecord[]>;
  /**
   * Leases up to `limit` open operations that are due at `now`, skipping ones under a live lease; with
   * `options.actions`, only operations of those actions (others stay claimable by reconcilers that know them).
   */
  claimDue(
    limit: number,
    leaseMs: number,
    owner: string,
    now: number,
    options?: ClaimOptions,
  ): Promise<Claim[]>;
  /**
   * Heartbeat: extends the lease held under `leaseToken` to `now + leaseMs` (never shortening it) while
   * that token is still the record's and the record is open. Resolves to the new expiry, or null when the
   * token no longer matches (someone else claimed the record, or it settled). Appends no event. Stores
   * on a shared database may take `now` from their own clock. Optional so that wrappers and older
   * stores still type-check; the conformance suite requires it, and without it nothing is renewed.
   */
  renewLease?(id: string, leaseToken: string, leaseMs: number, now: number): Promise<number | null>;
  /**
   * Retention: deletes settled operations requested and last changed before `settledBefore` (the request time
   * only matters for a record whose clocks disagreed: one host's settle stamped earlier than another's request),
   * with their events, at most `limit` per call (one short write), and resolves to how many it deleted. Open
   * operations and those awaiting a reviewer are never deleted, however old. A deleted operation's idempotency
   * key is free again: a repeat of its call after that runs as a new operation. `pruneSettled` sweeps them all.
   * Optional so that wrappers and older stores still type-check; the conformance suite requires it.
   */
  prune?(options: PruneOptions): Promise<number>;
  close(): Promise<void>;
}

/** What one `prune` call deletes. */
export interface PruneOptions {
  /** Epoch ms: settled operations whose `updatedAt` and `requestedAt` are before this are deleted. */
  settledBefore: number;
  /** At most this many operations per call, 1 to `MAX_PRUNE_LIMIT`; default `DEFAULT_PRUNE_LIMIT`. */
  limit?: number;
}

/** How many operations one `prune` call deletes unless told otherwise. */
export const DEFAULT_PRUNE_LIMIT = 1_000;

/** The most one `prune` call may delete: each call is one write that holds the write lock while it runs. */
export const MAX_PRUNE_LIMIT = 10_000;
