import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type Clock, MAX_TIMER_MS } from '../clock.js';
import type { AnyAction, Completion, Status } from '../contract/types.js';
import { optionalBoolean, optionalFunction, ReadbackError } from '../errors.js';
import { storableText } from '../store/records.js';
import type { Claim, OperationStore } from '../store/types.js';
import { checkSignal } from './call-checks.js';
import { Drive, type DriveEnv } from './drive.js';
import { describeError } from './readback.js';
import { giveBackLease } from './record-writer.js';
import { NEVER_ABORTED } from './timeout.js';
import type { RunTrace } from './trace.js';

/** Options for `runner.reconcile`. */
export interface ReconcileOptions {
  /** One pass: drive everything due now, then return. Otherwise loop until `signal` aborts. */
  once?: boolean;
  /** Operations claimed and driven in parallel per round (default 8). */
  concurrency?: number;
  /** Lease length; must outlast the longest step of any action (default 60 s). */
  leaseMs?: number;
  /** Lease owner name recorded on claims (default host/pid/random). */
  owner?: string;
  /** Stops claiming new work; operations already claimed finish their reads and writes first. */
  signal?: AbortSignal;
  /** Pause when nothing is due (default 1 s). */
  idleMs?: number;
  /** Called after every round with the running totals. */
  onProgress?: (report: ReconcileReport) => void;
}

/** Running totals of a reconcile loop. */
export interface ReconcileReport {
  rounds: number;
  claimed: number;
  /**
   * Outcomes of each drive, by status. Settled statuses count operations; `pending`/`unknown` count drives,
   * so in loop mode an operation re-polled four times while still queued adds four to `pending`.
   */
  byStatus: Record<Status, number>;
  /**
   * Claimed records whose action this process does not know, left under their lease for a reconciler that does.
   * Always 0 with the built-in stores, which claim only the actions the runner knows.
   */
  unknownAction: number;
  errors: number;
  lastError?: string;
  /** Heartbeats refused because another reconciler had claimed the operation (present once it happens). */
  leasesLost?: number;
}

const DEFAULTS = { concurrency: 8, leaseMs: 60_000, idleMs: 1_000 };
/** The longest pause between failed claim rounds, unless `idleMs` itself is longer. */
const MAX_BACKOFF_MS = 30_000;

/** Claims due operations with leases and drives each to its next honest state; never re-executes unsafe work. */
export async function reconcileLoop(
  env: DriveEnv & { store: OperationStore; clock: Clock },
  actions: ReadonlyMap<string, AnyAction>,
  options: ReconcileOptions = {},
): Promise<ReconcileReport> {
  checkOptions(options);
  const concurrency = positiveInt(options.concurrency ?? DEFAULTS.concurrency, 'concurrency');
  const leaseMs = positiveInt(options.leaseMs ?? DEFAULTS.leaseMs, 'leaseMs');
  const idleMs = positiveInt(options.idleMs ?? DEFAULTS.idleMs, 'idleMs');
  const owner = options.owner ?? `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
  const signal = options.signal ?? NEVER_ABORTED;
  const report: ReconcileReport = {
    rounds: 0,
    claimed: 0,
    byStatus: { verified: 0, pending: 0, failed: 0, partial: 0, no_op: 0, unknown: 0 },
    unknownAction: 0,
    errors: 0,
  };
  // In a single pass an operation is driven once, even if it becomes due again during the pass.
  const seen = new Set<string>();

  const drive = async (claim: Claim): Promise<void> => {
    const action = actions.get(claim.record.action);
    // Only a store that ignores `claimDue`'s action filter (a custom one) hands out records of other actions.
    if (!action) {
      report.unknownAction++;
      return;
    }
    let trace: RunTrace | undefined;
    const stopBeating = heartbeat(
      env.store,
      claim,
      leaseMs,
      () => env.clock.now(),
      () => {
        report.leasesLost = (report.leasesLost ?? 0) + 1;
      },
    );
    try {
      // Claimed work is never aborted mid-step: a stop request ends the loop between rounds, and keeps the
      // drives from starting a new execute (a retry stays due for the next run); their reads and writes finish.
      const facts = { runId: claim.record.runId, entry: 'reconcile', actor: owner } as const;
      trace = env.tracer?.begin(action, facts, claim.record);
      const d = new Drive(
        env,
        action,
        claim.record,
        { signal: NEVER_ABORTED, stopping: signal, actor: owner, trace },
        claim.leaseToken,
      );
      // A reconciler reads and parks; it never waits out accepted work's poll budget inside one round, which
      // would hold every other slot of the round (and a stop) until the budget ran out.
      d.runWait = false;
      const c: Completion = await d.reconcile();
      trace?.completed(c);
      report.byStatus[c.status]++;
    } catch (error) {
      // The call's record ends here too: a trace with no end, and a span never ended, otherwise.
      trace?.failed(error);
      report.errors++;
      report.lastError = describeError(error);
    } finally {
      stopBeating();
    }
  };

  // Consecutive rounds that failed to claim (the store is unreachable): the pause doubles each time, so
  // a database that is down is not hammered, and the loop carries on once it is back.
  let failures = 0;
  // In a single pass, operations driven already and due again take claim slots: a claim that held only those is
  // widened by as many, so what was due behind them is still reached (at most every seen one more).
  let limit = concurrency;
  while (!signal.aborted) {
    let claims: Claim[];
    try {
      // Only what this process can drive: the rest stays unleased for a reconciler that knows its action.
      claims = await env.store.claimDue(limit, leaseMs, owner, env.clock.now(), {
        actions: [...actions.keys()],
      });
      if (options.once) {
        await release(
          env.store,
          claims.filter((c) => seen.has(c.record.id)),
          owner,
          env.clock.now(),
        );
      }
      failures = 0;
    } catch (error) {
      report.errors++;
      report.lastError = describeError(error);
      options.onProgress?.({ ...report, byStatus: { ...report.byStatus } });
      // A store that is down comes back; one that refuses the call (closed, say) never will: waiting on it would
      // spin until someone aborts the loop, so the report says why it ended instead.
      if (options.once || isPermanent(error)) break;
      const backoff = Math.min(idleMs * 2 ** Math.min(failures++, 5), Math.max(idleMs, MAX_BACKOFF_MS));
      if (!(await pause(env.clock, backoff, signal))) break;
      continue;
    }
    const fresh = options.once ? claims.filter((c) => !seen.has(c.record.id)) : claims;
    if (fresh.length === 0) {
      if (options.once) {
        if (claims.length < limit || limit >= concurrency + seen.size) break;
        limit += claims.length;
        continue;
      }
      if (!(await pause(env.clock, idleMs, signal))) break;
      continue;
    }
    // A widened claim may bring more new ones than `concurrency`: the rest go back, for the next claim.
    const round = fresh.slice(0, concurrency);
    if (fresh.length > concurrency) {
      // Not given back (the store failed): their leases lapse and any reconciler takes them after that.
      await release(env.store, fresh.slice(concurrency), owner, env.clock.now()).catch((error) => {
        report.errors++;
        report.lastError = describeError(error);
      });
    }
    limit = concurrency;
    // Only a single pass reads `seen`; a loop that kept adding to it would grow by every operation ever claimed.
    if (options.once) for (const c of round) seen.add(c.record.id);
    report.rounds++;
    report.claimed += round.length;
    await Promise.all(round.map(drive));
    options.onProgress?.({ ...report, byStatus: { ...report.byStatus } });
  }
  return report;
}

/**
 * Renews `claim`'s lease every third of `leaseMs` until the returned stop function runs; calls `lost` and
 * stops when the store says the token is no longer the record's. Real timers, not the injected clock:
 * a lease lapses in real time, and a virtual clock must not be moved by a background beat.
 */
function heartbeat(
  store: OperationStore,
  claim: Claim,
  leaseMs: number,
  now: () => number,
  lost: () => void,
): () => void {
  if (typeof store.renewLease !== 'function') return () => undefined;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const beat = async () => {
    try {
      const until = await store.renewLease!(claim.record.id, claim.leaseToken, leaseMs, now());
      if (until === null) {
        // A drive that finished while this beat was in flight cleared the lease itself: not a loss.
        if (!stopped) lost();
        return;
      }
    } catch {
      // The store is unreachable right now; two thirds of the lease remain, so the next beat may still land.
    }
    schedule();
  };
  const schedule = () => {
    if (stopped) return;
    // Capped: setTimeout fires at once for a delay past MAX_TIMER_MS, which would renew in a tight loop.
    timer = setTimeout(beat, Math.min(MAX_TIMER_MS, Math.max(1, Math.floor(leaseMs / 3))));
    timer.unref?.();
  };
  schedule();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/** Hands back leases taken by a single pass on records it already drove. */
async function release(store: OperationStore, claims: Claim[], owner: string, now: number): Promise<void> {
  for (const { record, leaseToken } of claims) await giveBackLease(store, record, leaseToken, owner, now);
}

async function pause(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await clock.sleep(ms, signal);
    return true;
  } catch {
    return false;
  }
}

// Checked before the first claim: a bad value found later would surface only after work was taken.
function checkOptions(options: ReconcileOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new ReadbackError('invalid_options', 'expected an options object', 'options');
  }
  optionalBoolean(options.once, 'once');
  if (options.owner !== undefined && (typeof options.owner !== 'string' || options.owner === '')) {
    throw new ReadbackError('invalid_options', 'must be a non-empty string', 'owner');
  }
  // Every claim records the owner: text a store cannot hold would fail each claim, round after round.
  if (options.owner !== undefined && !storableText(options.owner, true)) {
    throw new ReadbackError(
      'invalid_options',
      'holds a NUL character or an unpaired UTF-16 surrogate, which a store cannot record as given',
      'owner',
    );
  }
  optionalFunction(options.onProgress, 'onProgress');
  checkSignal(options.signal, 'signal');
}

function positiveInt(value: number, field: string): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new ReadbackError('invalid_options', `must be a whole number ≥ 1; got ${String(value)}`, field);
  }
  return value;
}

// Stores report a failure to reach their database as the driver's own error; a ReadbackError is a refusal that
// no retry changes (a closed store, an argument it cannot take), except a conflict with another writer. So is a
// SQLite file this process cannot write or open (read-only, or its path gone): waiting would spin forever.
function isPermanent(error: unknown): boolean {
  if (error instanceof ReadbackError) return error.code !== 'store_conflict';
  const { code, errcode, message } = (error ?? {}) as {
    code?: unknown;
    errcode?: unknown;
    message?: unknown;
  };
  // Only a file that cannot be written for good: plainly read-only, or its directory, its move or a hot journal
  // making it so. SQLITE_CANTOPEN (no file descriptors left, say) and READONLY_RECOVERY / _CANTINIT (another
  // connection recovering the WAL) pass, so the loop keeps retrying them, with the reason in its progress line.
  if (typeof code === 'string' && code.startsWith('SQLITE_')) return PERMANENT_SQLITE_CODES.has(code);
  if (code === 'ERR_SQLITE_ERROR' && typeof errcode === 'number')
    return PERMANENT_SQLITE_ERRCODES.has(errcode);
  return readOnlyMessage(message);
}

const readOnlyMessage = (message: unknown) =>
  typeof message === 'string' && message.includes('attempt to write a readonly database');

// SQLite's (extended) result codes for a database that stays read-only, as named by one driver and numbered by
// Node's built-in one.
const PERMANENT_SQLITE_CODES = new Set([
  'SQLITE_READONLY',
  'SQLITE_READONLY_ROLLBACK',
  'SQLITE_READONLY_DBMOVED',
  'SQLITE_READONLY_DIRECTORY',
]);
const PERMANENT_SQLITE_ERRCODES = new Set([8, 8 | (3 << 8), 8 | (4 << 8), 8 | (6 << 8)]);
