import {
  type CallRecord,
  type CommonFaults,
  commonFaults,
  copy,
  type FakeOptions,
  FakeSystem,
  forbiddenError,
  transportError,
} from './shared.js';

/** Lifecycle states a fake ticket can be in. */
export type TicketStatus = 'open' | 'pending' | 'resolved' | 'closed';

/** Priorities a fake ticket can have. */
export type TicketPriority = 'low' | 'normal' | 'high' | 'urgent';

/** A ticket as the primary store holds it; `version` bumps on every applied write. */
export interface Ticket {
  id: string;
  tenant: string;
  status: TicketStatus;
  assignee: string | null;
  priority: TicketPriority;
  version: number;
  updatedAt: number;
  lastOperationId: string | null;
}

/** The fields a write may change. */
export type TicketPatch = Partial<Pick<Ticket, 'status' | 'assignee' | 'priority'>>;

/** A ticket to seed; everything but `id` and `tenant` has a default (open, unassigned, normal, version 1). */
export type TicketSeed = Pick<Ticket, 'id' | 'tenant'> & Partial<Ticket>;

/** One entry of a ticket's audit log: which operation changed what, producing which version. */
export interface TicketAuditEntry {
  operationId: string;
  version: number;
  changes: TicketPatch;
  at: number;
}

/** One write that really changed a ticket; `late` marks a write that landed after its caller timed out. */
export interface TicketWrite {
  ticketId: string;
  tenant: string;
  operationId: string;
  changes: TicketPatch;
  version: number;
  at: number;
  late: boolean;
}

/** Options of `update`: the caller's tenant and operation id, an optional optimistic-lock version and actor. */
export interface TicketUpdateOptions {
  tenant: string;
  operationId: string;
  expectedVersion?: number;
  actor?: string;
}

/** What `update` answers (when it answers at all). */
export type TicketUpdateResult =
  | { ok: true; version: number }
  | { ok: false; code: 'not_found' }
  | { ok: false; code: 'version_conflict'; currentVersion: number };

/** Faults of the ticket system, on top of the common ones. */
export interface TicketFaults extends CommonFaults {
  /** One-shot: the next write that would apply reports success (claiming the next version) but changes nothing. */
  softFailNextWrite: boolean;
  /** One-shot: the next write throws ETIMEDOUT now and is processed this many ms later. */
  landNextWriteAfterMs: number | null;
}

/** Constructor options of {@link FakeTicketSystem}. */
export interface FakeTicketSystemOptions extends FakeOptions {
  /** How far the replica trails the primary, in ms (default 0). */
  replicaLagMs?: number;
}

/** A multi-tenant ticket system with a primary, a lagging replica, an audit log and injectable faults. */
export class FakeTicketSystem extends FakeSystem<TicketFaults> {
  /** How far `getFromReplica` trails the primary, in ms; change it at any time. */
  replicaLagMs: number;
  private readonly tickets = new Map<string, Ticket>();
  // Every version a ticket has had, with the time it became current, so the replica can answer "as of".
  private readonly history = new Map<string, { at: number; ticket: Ticket }[]>();
  private readonly audits = new Map<string, TicketAuditEntry[]>();
  private readonly applied: TicketWrite[] = [];
  private readonly deniedActors = new Set<string>();

  /** Creates an empty ticket system on the given clock. */
  constructor(options: FakeTicketSystemOptions) {
    super('tickets', options, { ...commonFaults(), softFailNextWrite: false, landNextWriteAfterMs: null });
    this.replicaLagMs = options.replicaLagMs ?? 0;
  }

  /** Writes that really changed a ticket, in the order they took effect (due late landings included). */
  get writes(): readonly TicketWrite[] {
    this.settleLandings();
    return copy(this.applied);
  }

  /** Puts tickets in place as pre-existing state: no audit entry, and visible on the replica immediately. */
  seed(tickets: TicketSeed[]): void {
    for (const seed of tickets) {
      const ticket: Ticket = {
        status: 'open',
        assignee: null,
        priority: 'normal',
        version: 1,
        updatedAt: this.clock.now(),
        lastOperationId: null,
        ...copy(seed),
      };
      this.tickets.set(ticket.id, ticket);
      // -Infinity: seeded state predates any replica lag window.
      this.history.set(ticket.id, [{ at: Number.NEGATIVE_INFINITY, ticket: copy(ticket) }]);
      this.audits.set(ticket.id, []);
    }
  }

  /** Makes every write by this actor fail with a 403. */
  denyActor(name: string): void {
    this.deniedActors.add(name);
  }

  /** Changes a ticket; see {@link TicketUpdateResult} for answers, and throws 403 for a wrong tenant or denied actor. */
  async update(id: string, patch: TicketPatch, options: TicketUpdateOptions): Promise<TicketUpdateResult> {
    const call = this.record('update', [id, patch, options]);
    if (this.take(call, 'failNextWrite')) throw transportError(this.where(call));
    const lateMs = this.faults.landNextWriteAfterMs;
    if (lateMs !== null) {
      this.faults.landNextWriteAfterMs = null;
      this.fired(call, 'landNextWriteAfterMs');
      const request = copy({ id, patch, options });
      // The server processes it later, against the state of that moment; errors then go nowhere.
      this.landLater(this.clock.now() + lateMs, (at) => {
        try {
          this.process(call, request.id, request.patch, request.options, at, true);
        } catch {}
      });
      throw transportError(this.where(call));
    }
    let result: TicketUpdateResult;
    try {
      result = this.process(call, id, patch, options, this.clock.now(), false);
    } catch (error) {
      // A 403 is a response too; a lost response hides it just the same.
      if (this.take(call, 'loseNextResponse')) throw transportError(this.where(call));
      throw error;
    }
    if (this.take(call, 'loseNextResponse')) throw transportError(this.where(call));
    return result;
  }

  /** The authoritative primary read: a copy of the ticket, or null; any tenant may read, so callers check scope. */
  async get(id: string): Promise<Ticket | null> {
    const call = this.record('get', [id]);
    await this.readGate(call);
    const ticket = this.tickets.get(id);
    return ticket ? copy(ticket) : null;
  }

  /** A read from the replica: the ticket as it was `replicaLagMs` ago, or null if it did not exist then. */
  async getFromReplica(id: string): Promise<Ticket | null> {
    const call = this.record('getFromReplica', [id]);
    await this.readGate(call);
    const asOf = this.clock.now() - this.replicaLagMs;
    let found: Ticket | null = null;
    for (const entry of this.history.get(id) ?? []) {
      if (entry.at > asOf) break;
      found = entry.ticket;
    }
    return found ? copy(found) : null;
  }

  /** The ticket's audit log, oldest first (empty for unknown tickets). */
  async auditLog(id: string): Promise<TicketAuditEntry[]> {
    const call = this.record('auditLog', [id]);
    await this.readGate(call);
    return copy(this.audits.get(id) ?? []);
  }

  // The server side of a write: checks, then applies (unless soft-failing). Throws only the 403.
  private process(
    call: CallRecord,
    id: string,
    patch: TicketPatch,
    options: TicketUpdateOptions,
    at: number,
    late: boolean,
  ): TicketUpdateResult {
    if (options.actor !== undefined && this.deniedActors.has(options.actor))
      throw forbiddenError(this.where(call));
    const ticket = this.tickets.get(id);
    if (!ticket) return { ok: false, code: 'not_found' };
    if (ticket.tenant !== options.tenant) throw forbiddenError(this.where(call));
    if (options.expectedVersion !== undefined && options.expectedVersion !== ticket.version) {
      return { ok: false, code: 'version_conflict', currentVersion: ticket.version };
    }
    const version = ticket.version + 1;
    if (this.take(call, 'softFailNextWrite')) return { ok: true, version };
    const changes = pickPatch(patch);
    Object.assign(ticket, changes, { version, updatedAt: at, lastOperationId: options.operationId });
    this.history.get(id)!.push({ at, ticket: copy(ticket) });
    this.audits.get(id)!.push({ operationId: options.operationId, version, changes: copy(changes), at });
    this.applied.push({
      ticketId: id,
      tenant: ticket.tenant,
      operationId: options.operationId,
      changes,
      version,
      at,
      late,
    });
    return { ok: true, version };
  }
}

// Only the writable fields, so a stray `version` or `tenant` in a patch cannot corrupt the ticket.
function pickPatch(patch: TicketPatch): TicketPatch {
  const changes: TicketPatch = {};
  if (patch.status !== undefined) changes.status = patch.status;
  if (patch.assignee !== undefined) changes.assignee = patch.assignee;
  if (patch.priority !== undefined) changes.priority = patch.priority;
  return changes;
}
