/**
 * Hand-built completions for the messages tests: a helpdesk agent that resolves ticket T-104,
 * emails ana@example.com, refunds order 42 and migrates a batch of records.
 */
import fc from 'fast-check';
import type { Completion, CompletionDraft, Status } from '../../src/contract/types.js';
import { STATUSES } from '../../src/contract/types.js';
import { defaultMessage } from '../../src/messages/templates.js';

/** A draft with sensible defaults; every field can be overridden. */
export function draft(overrides: Partial<CompletionDraft> = {}): CompletionDraft {
  return {
    status: 'verified',
    action: 'resolve_ticket',
    target: 'ticket:T-104',
    operationId: 'op_1',
    idempotencyKey: 'idem_1',
    attempt: 1,
    postcondition: 'ticket T-104 has status resolved',
    mode: 'committed',
    observedAt: '2025-03-01T10:00:00.000Z',
    checks: [],
    nextAllowedAction: 'none',
    safeToRepeat: true,
    ...overrides,
  };
}

/** A completion whose message comes from the default template unless one is given. */
export function completion(overrides: Partial<CompletionDraft> = {}, message?: string): Completion {
  const d = draft(overrides);
  return { ...d, message: message ?? defaultMessage(d) };
}

/** The helpdesk run's four actions, each in whatever status a test needs. */
export const helpdesk = {
  resolveTicket: (status: Status, extra: Partial<CompletionDraft> = {}): Completion =>
    completion({
      status,
      action: 'resolve_ticket',
      target: 'ticket:T-104',
      operationId: 'op_t104',
      postcondition: 'ticket T-104 has status resolved',
      ...extra,
    }),
  sendEmail: (status: Status, extra: Partial<CompletionDraft> = {}): Completion =>
    completion({
      status,
      action: 'send_email',
      target: 'email:ana@example.com',
      operationId: 'op_1',
      mode: 'accepted',
      postcondition: 'the proposal email to ana@example.com is delivered',
      nextAllowedAction: status === 'pending' ? 'poll' : 'none',
      ...extra,
    }),
  refundOrder: (status: Status, extra: Partial<CompletionDraft> = {}): Completion =>
    completion({
      status,
      action: 'refundOrder',
      target: 'order:42',
      operationId: 'op_r42',
      postcondition: 'order 42 is refunded in full',
      ...extra,
    }),
  migrateBatch: (status: Status, extra: Partial<CompletionDraft> = {}): Completion =>
    completion({
      status,
      action: 'migrate_batch',
      target: 'batch:2025-q1',
      operationId: 'op_mig',
      postcondition: 'every record of batch 2025-q1 is migrated',
      units: { required: 10, passed: 8, failed: 2, failedTargets: ['rec-3', 'rec-7'] },
      ...extra,
    }),
};

// Free text that tries hard to trip the templates: effect words, quotes, code marks, line breaks.
const tricky = fc.oneof(
  fc.constantFrom(
    'ticket is resolved',
    'Done. All set!',
    'email sent and delivered',
    'order "42" refunded',
    'status: `closed`',
    'the “migration” completed\nsuccessfully',
    'it was paid, charged, booked, posted and archived.',
    'Refund issued. Customer notified.',
    '',
  ),
  fc.string({ maxLength: 40 }),
);

const identifier = fc.oneof(
  fc.constantFrom('ticket:T-104', 'email:ana@example.com', 'order:42', 'batch:2025-q1', 'done', 'sent`x'),
  fc.string({ maxLength: 20 }),
);

/** Any draft, with free text chosen to break naive templates. */
export const anyDraft: fc.Arbitrary<CompletionDraft> = fc
  .record({
    status: fc.constantFrom(...STATUSES),
    action: fc.oneof(
      fc.constantFrom(
        'resolve_ticket',
        'send_email',
        'refundOrder',
        'migrate_batch',
        'mark_done',
        'complete_task',
      ),
      fc.string({ maxLength: 20 }),
    ),
    target: identifier,
    postcondition: tricky,
    reason: fc.option(tricky, { nil: undefined }),
    errorCode: fc.option(fc.constantFrom('readback_mismatch', 'verifier_unavailable', 'sent_twice'), {
      nil: undefined,
    }),
    observedAt: fc.option(fc.constantFrom('2025-03-01T10:00:00.000Z', 'yesterday. Done'), { nil: undefined }),
    evidence: fc.option(fc.dictionary(fc.constantFrom('status', 'note'), tricky, { maxKeys: 2 }), {
      nil: undefined,
    }),
    checks: fc.array(fc.record({ name: identifier, pass: fc.boolean() }), { maxLength: 3 }),
    units: fc.option(
      fc.record({
        required: fc.nat(20),
        passed: fc.nat(20),
        failed: fc.nat(20),
        failedTargets: fc.array(identifier, { maxLength: 14 }),
      }),
      { nil: undefined },
    ),
  })
  .map((r) => draft(r));

/** Several drafts with distinct operation ids, as one run produces. */
export const anyDrafts: fc.Arbitrary<CompletionDraft[]> = fc
  .array(anyDraft, { maxLength: 6 })
  .map((ds) => ds.map((d, i) => ({ ...d, operationId: `op_${i + 1}` })));
