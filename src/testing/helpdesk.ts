import { defineAction } from '../contract/define.js';
import { freshness } from '../contract/freshness.js';
import type { Action, StepContext, TerminalState } from '../contract/types.js';
import { accepted, rejected } from '../runner/markers.js';
import { type BatchRecord, FakeBatchTarget } from './fakes/batch.js';
import { FakeClock } from './fakes/fake-clock.js';
import { FakeLedger, type LedgerEntry } from './fakes/ledger.js';
import { FakeMailProvider, type MailMessage } from './fakes/mail.js';
import { FakeTicketSystem, type Ticket } from './fakes/tickets.js';
import { schema } from './schema.js';

/** A pager with no read API: the kind of side effect only an optimistic action can wrap. */
export class FakePager {
  readonly pages: { message: string; at: number }[] = [];
  constructor(private readonly clock: { now(): number }) {}
  /** Sends a page; nobody can ever read back whether a human saw it. */
  async page(message: string): Promise<{ ok: true }> {
    this.pages.push({ message, at: this.clock.now() });
    return { ok: true };
  }
}

/** Options for `createHelpdesk`. */
export interface HelpdeskOptions {
  clock?: FakeClock;
  /** Where update_ticket reads back from: the primary (authoritative) or a lagging replica (a verifier bug). */
  ticketReadsFrom?: 'primary' | 'replica';
  /** Settle window for ticket reads, for lagging replicas. */
  ticketSettle?: { timeoutMs: number; intervalMs: number };
  /** Actors the update_ticket policy refuses. */
  deniedActors?: string[];
}

const ticketInput = schema({
  id: 'string',
  status: ['open', 'pending', 'resolved', 'closed'] as const,
  expectedVersion: { kind: 'integer', optional: true },
});
const emailInput = schema({ to: 'email', subject: 'string', body: 'string' });
const refundInput = schema({ orderId: 'string', amountCents: 'integer' });
const migrateInput = schema({ ids: { array: 'string' }, toVersion: 'integer' });
const pageInput = schema({ message: 'string' });

type TicketInput = { id: string; status: Ticket['status']; expectedVersion?: number };

function tenantOf(ctx: StepContext): string {
  return ctx.scope.tenant ?? 'default';
}

function isForbidden(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { status?: unknown }).status === 403;
}

/**
 * A helpdesk built on the fakes: five actions (one per kind of side effect) with honest contracts.
 * Used by readback's own tests and demo, and a worked example of writing contracts.
 */
export function createHelpdesk(options: HelpdeskOptions = {}) {
  const clock = options.clock ?? new FakeClock();
  const tickets = new FakeTicketSystem({ clock });
  const mail = new FakeMailProvider({ clock });
  const ledger = new FakeLedger({ clock });
  const batch = new FakeBatchTarget({ clock });
  const pager = new FakePager(clock);
  const denied = new Set(options.deniedActors ?? []);
  const readTicket = (id: string) =>
    options.ticketReadsFrom === 'replica' ? tickets.getFromReplica(id) : tickets.get(id);

  const updateTicket: Action<TicketInput, Ticket> = defineAction({
    name: 'update_ticket',
    system: 'the ticket system',
    description: 'Set the status of a helpdesk ticket.',
    input: ticketInput,
    target: (input) => `ticket:${input.id}`,
    postcondition: 'The ticket has the requested status, written by this operation.',
    authorize: (_input, ctx) =>
      ctx.actor && denied.has(ctx.actor)
        ? { allowed: false, reason: `${ctx.actor} may not change tickets` }
        : true,
    before: (input) => tickets.get(input.id),
    async execute(input, ctx) {
      try {
        const result = await tickets.update(
          input.id,
          { status: input.status },
          {
            tenant: tenantOf(ctx),
            operationId: ctx.operationId,
            ...(input.expectedVersion !== undefined ? { expectedVersion: input.expectedVersion } : {}),
            ...(ctx.actor ? { actor: ctx.actor } : {}),
          },
        );
        if (!result.ok)
          return rejected(result.code, `the ticket system refused the update (${result.code})`, result);
        return result;
      } catch (error) {
        // A 403 is an answer, not a lost request: nothing was applied.
        if (isForbidden(error)) return rejected('permission_denied', 'the ticket system denied the write');
        throw error;
      }
    },
    observe: (input) => readTicket(input.id),
    expect: (input) => ({ status: input.status }),
    fresh: freshness.versionAbove((t: Ticket) => t.version),
    // The ticket read must be the requested one: a misrouted id with the same status proves nothing.
    targetOf: (t) => `ticket:${t.id}`,
    scopeOf: (t) => ({ tenant: t.tenant }),
    safeToRepeat: false,
    maxInFlightMs: 10_000,
    ...(options.ticketSettle ? { settle: options.ticketSettle } : {}),
  });

  const sendEmail = defineAction({
    name: 'send_email',
    system: 'the mail provider',
    description: 'Send an email through the mail provider.',
    input: emailInput,
    target: (input) => `email:${input.to}`,
    mode: 'accepted',
    postcondition: 'The provider reports the message delivered to the recipient.',
    async execute(input, ctx) {
      const queued = await mail.send({ ...input, idempotencyKey: ctx.idempotencyKey });
      return accepted(queued.messageId, queued);
    },
    observe: (_input, ctx) => mail.lookup(ctx.idempotencyKey),
    terminal: (m: MailMessage): TerminalState =>
      m.status === 'queued' ? 'running' : m.status === 'delivered' ? 'succeeded' : 'failed',
    expect: (input) => ({ to: input.to, status: 'delivered' }),
    fresh: freshness.idempotencyKeyIn((m: MailMessage) => m.idempotencyKey),
    targetOf: (m: MailMessage) => `email:${m.to}`,
    // The provider deduplicates on our idempotency key, so a re-send cannot double the email.
    safeToRepeat: true,
    maxInFlightMs: 5_000,
    poll: { maxDurationMs: 20_000, maxReads: 10, initialDelayMs: 500, maxDelayMs: 4_000 },
  });

  const refundOrder = defineAction({
    name: 'refund_order',
    system: 'the ledger',
    description: 'Refund an order through the ledger.',
    input: refundInput,
    target: (input) => `order:${input.orderId}`,
    postcondition: 'The ledger holds one refund entry for this order and amount under our idempotency key.',
    async execute(input, ctx) {
      const result = await ledger.refund({ ...input, idempotencyKey: ctx.idempotencyKey });
      return result.ok ? result : rejected(result.code, result.reason, result);
    },
    observe: (_input, ctx) => ledger.findByKey(ctx.idempotencyKey),
    expect: (input, entry: LedgerEntry) => [
      { name: 'kind', pass: entry.kind === 'refund', expected: 'refund', observed: entry.kind },
      {
        name: 'orderId',
        pass: entry.kind === 'refund' && entry.orderId === input.orderId,
        expected: input.orderId,
        observed: entry.kind === 'refund' ? entry.orderId : null,
      },
      {
        name: 'amountCents',
        pass: entry.amountCents === input.amountCents,
        expected: input.amountCents,
        observed: entry.amountCents,
      },
    ],
    fresh: freshness.idempotencyKeyIn((e: LedgerEntry) => e.idempotencyKey),
    // A charge under our key belongs to an account, not to this order: it is another record, not our refund.
    targetOf: (e: LedgerEntry) => (e.kind === 'refund' ? `order:${e.orderId}` : `account:${e.account}`),
    safeToRepeat: true,
    maxInFlightMs: 5_000,
  });

  const migrateRecords = defineAction({
    name: 'migrate_records',
    system: 'the records database',
    description: 'Migrate a batch of records to a schema version.',
    input: migrateInput,
    target: (input) => `batch:${input.ids.length}-records-v${input.toVersion}`,
    postcondition: 'Every record in the batch is at the requested schema version.',
    execute: (input) => batch.migrate(input.ids, { toVersion: input.toVersion }),
    observe: async (input) => ({ records: await batch.readMany(input.ids) }),
    expect: (input, observed: { records: ({ schemaVersion: number } | null)[] }) =>
      input.ids.map((id, i) => ({
        target: `record:${id}`,
        expected: { schemaVersion: input.toVersion },
        observed: (observed.records[i] as Record<string, unknown> | null) ?? null,
      })),
    // Called on each unit's record: the row read for `record:<id>` must be that record.
    targetOf: (r: unknown) => `record:${(r as BatchRecord).id}`,
    safeToRepeat: true,
  });

  const pageOncall = defineAction({
    name: 'page_oncall',
    system: 'the pager',
    description: 'Page the on-call engineer (no way to read back that a human saw it).',
    input: pageInput,
    target: () => 'pager:oncall',
    mode: 'optimistic',
    postcondition: 'The on-call engineer received the page.',
    execute: (input) => pager.page(input.message),
    safeToRepeat: false,
  });

  return {
    clock,
    tickets,
    mail,
    ledger,
    batch,
    pager,
    actions: { updateTicket, sendEmail, refundOrder, migrateRecords, pageOncall },
  };
}

/** The systems and actions `createHelpdesk` returns. */
export type Helpdesk = ReturnType<typeof createHelpdesk>;
