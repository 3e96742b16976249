import {
  type CallRecord,
  type CommonFaults,
  commonFaults,
  copy,
  type FakeOptions,
  FakeSystem,
  transportError,
} from './shared.js';

/** A refund request; the idempotency key makes retries safe. */
export interface RefundRequest {
  orderId: string;
  amountCents: number;
  idempotencyKey: string;
}

/** A charge request; the idempotency key makes retries safe. */
export interface ChargeRequest {
  account: string;
  amountCents: number;
  idempotencyKey: string;
}

/** A committed ledger entry. */
export type LedgerEntry =
  | {
      entryId: string;
      kind: 'refund';
      orderId: string;
      amountCents: number;
      idempotencyKey: string;
      at: number;
    }
  | {
      entryId: string;
      kind: 'charge';
      account: string;
      amountCents: number;
      idempotencyKey: string;
      at: number;
    };

/**
 * What a request answers. `replayed` is true when the key was already committed with the same
 * parameters and the original entry is returned (nothing new was written). Failure codes:
 * `idempotency_mismatch`, `invalid_amount`, or whatever `rejectNext` armed.
 */
export type LedgerResult =
  | { ok: true; entryId: string; replayed: boolean }
  | { ok: false; code: string; reason: string };

/** Faults of the ledger, on top of the common ones. */
export interface LedgerFaults extends CommonFaults {
  /** One-shot: the next request that would write an entry is rejected with this code, writing nothing. */
  rejectNext: { code: string; reason: string } | null;
  /** One-shot: the next request throws ETIMEDOUT now and is processed this many ms later. */
  landNextWriteAfterMs: number | null;
}

type LedgerRequest = ({ kind: 'refund' } & RefundRequest) | ({ kind: 'charge' } & ChargeRequest);

/** A payments ledger with provider-side idempotency keys and injectable faults. */
export class FakeLedger extends FakeSystem<LedgerFaults> {
  private readonly committed: LedgerEntry[] = [];
  private readonly byKey = new Map<string, LedgerEntry>();

  /** Creates an empty ledger on the given clock. */
  constructor(options: FakeOptions) {
    super('ledger', options, { ...commonFaults(), rejectNext: null, landNextWriteAfterMs: null });
  }

  /** Arms a one-shot business rejection; shorthand for `faults.rejectNext = { code, reason }`. */
  rejectNext(code: string, reason: string): void {
    this.faults.rejectNext = { code, reason };
  }

  /** Refunds an order once per idempotency key. */
  async refund(request: RefundRequest): Promise<LedgerResult> {
    const call = this.record('refund', [request]);
    return this.request(call, { kind: 'refund', ...copy(request) });
  }

  /** Charges an account once per idempotency key. */
  async charge(request: ChargeRequest): Promise<LedgerResult> {
    const call = this.record('charge', [request]);
    return this.request(call, { kind: 'charge', ...copy(request) });
  }

  /** The entry committed under this idempotency key, or null: the authoritative read-back. */
  async findByKey(idempotencyKey: string): Promise<LedgerEntry | null> {
    const call = this.record('findByKey', [idempotencyKey]);
    await this.readGate(call);
    const entry = this.byKey.get(idempotencyKey);
    return entry ? copy(entry) : null;
  }

  /** Every committed entry in order (the effect log); unaffected by faults and not recorded as a call. */
  entries(): LedgerEntry[] {
    this.settleLandings();
    return copy(this.committed);
  }

  /** Total charged to an account, in cents; ground truth, unaffected by faults. */
  balance(account: string): number {
    return this.entries().reduce(
      (sum, e) => (e.kind === 'charge' && e.account === account ? sum + e.amountCents : sum),
      0,
    );
  }

  /** Total refunded on an order, in cents; ground truth, unaffected by faults. */
  refunded(orderId: string): number {
    return this.entries().reduce(
      (sum, e) => (e.kind === 'refund' && e.orderId === orderId ? sum + e.amountCents : sum),
      0,
    );
  }

  private request(call: CallRecord, request: LedgerRequest): LedgerResult {
    if (this.take(call, 'failNextWrite')) throw transportError(this.where(call));
    const lateMs = this.faults.landNextWriteAfterMs;
    if (lateMs !== null) {
      this.faults.landNextWriteAfterMs = null;
      this.fired(call, 'landNextWriteAfterMs');
      // Processed later against the ledger as it is then, so a retry that beat it makes it a replay.
      this.landLater(this.clock.now() + lateMs, (at) => this.process(call, request, at));
      throw transportError(this.where(call));
    }
    const result = this.process(call, request, this.clock.now());
    if (this.take(call, 'loseNextResponse')) throw transportError(this.where(call));
    return result;
  }

  private process(call: CallRecord, request: LedgerRequest, at: number): LedgerResult {
    const existing = this.byKey.get(request.idempotencyKey);
    if (existing) {
      if (!sameParams(existing, request)) {
        return {
          ok: false,
          code: 'idempotency_mismatch',
          reason: `key ${request.idempotencyKey} was already used with different parameters`,
        };
      }
      return { ok: true, entryId: existing.entryId, replayed: true };
    }
    const rejection = this.faults.rejectNext;
    if (rejection) {
      this.faults.rejectNext = null;
      this.fired(call, `rejectNext:${rejection.code}`);
      return { ok: false, code: rejection.code, reason: rejection.reason };
    }
    if (!Number.isInteger(request.amountCents) || request.amountCents <= 0) {
      return { ok: false, code: 'invalid_amount', reason: 'amountCents must be a positive integer' };
    }
    const entryId = `le-${String(this.committed.length + 1).padStart(4, '0')}`;
    const entry: LedgerEntry =
      request.kind === 'refund'
        ? {
            entryId,
            kind: 'refund',
            orderId: request.orderId,
            amountCents: request.amountCents,
            idempotencyKey: request.idempotencyKey,
            at,
          }
        : {
            entryId,
            kind: 'charge',
            account: request.account,
            amountCents: request.amountCents,
            idempotencyKey: request.idempotencyKey,
            at,
          };
    this.committed.push(entry);
    this.byKey.set(entry.idempotencyKey, entry);
    return { ok: true, entryId, replayed: false };
  }
}

function sameParams(entry: LedgerEntry, request: LedgerRequest): boolean {
  if (entry.amountCents !== request.amountCents) return false;
  if (entry.kind === 'refund') return request.kind === 'refund' && entry.orderId === request.orderId;
  return request.kind === 'charge' && entry.account === request.account;
}
