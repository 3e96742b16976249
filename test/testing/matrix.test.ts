import { describe, expect, it } from 'vitest';
import { defineAction } from '../../src/index.js';
import { transportError } from '../../src/testing/fakes/shared.js';
import {
  type CommonFaults,
  createHelpdesk,
  type Helpdesk,
  type Ticket,
  type TicketUpdateResult,
} from '../../src/testing/index.js';
import {
  completionMatrix,
  type MatrixCase,
  type MatrixHarness,
  type MatrixInstance,
  type VerifierState,
} from '../../src/testing/matrix.js';

/** A fresh helpdesk with one ticket the harnesses change. */
function desk(): Helpdesk {
  const hd = createHelpdesk();
  hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
  return hd;
}

/** Every harness's system: the helpdesk, so fault hooks can reach its fakes. */
type Desk<I> = MatrixInstance<I> & { hd: Helpdesk };

/** The matrix calls this right after execute returns, so the baseline read still works. */
function readPath(fake: { faults: CommonFaults }, state: VerifierState): void {
  fake.faults.readerDown = state === 'down';
  fake.faults.readerDenied = state === 'denied';
  fake.faults.readerHangs = state === 'hangs';
}

/** Swaps a method for its next call only, e.g. to give a fake with no fault fields a lost request. */
function once<T extends object, K extends keyof T>(
  target: T,
  key: K,
  replace: (original: T[K]) => T[K],
): void {
  const original = target[key];
  const replacement = replace((original as (...a: unknown[]) => unknown).bind(target) as T[K]);
  target[key] = ((...args: unknown[]) => {
    target[key] = original;
    return (replacement as (...a: unknown[]) => unknown)(...args);
  }) as T[K];
}

// The contracts the matrix picks cases from; each case's setup() builds its own helpdesk and actions.
const contracts = createHelpdesk().actions;

function ticketHarness(overrides: Partial<MatrixHarness<TicketInput, Desk<TicketInput>>> = {}) {
  return {
    action: contracts.updateTicket,
    input: { id: 'T-104', status: 'resolved' },
    otherInput: { id: 'T-104', status: 'closed' },
    invalidInput: { id: 'T-104', status: 'done' },
    ctx: { scope: { tenant: 'acme' }, actor: 'agent' },
    setup() {
      const hd = desk();
      return {
        hd,
        clock: hd.clock,
        action: hd.actions.updateTicket,
        effects: () => hd.tickets.writes.length,
      };
    },
    faults: {
      alreadySatisfied: ({ hd }) => hd.tickets.seed([{ id: 'T-104', tenant: 'acme', status: 'resolved' }]),
      softFail: ({ hd }) => {
        hd.tickets.faults.softFailNextWrite = true;
      },
      loseRequest: ({ hd }) => {
        hd.tickets.faults.failNextWrite = true;
      },
      loseResponse: ({ hd }) => {
        hd.tickets.faults.loseNextResponse = true;
      },
      landLate: ({ hd }, ms) => {
        hd.tickets.faults.landNextWriteAfterMs = ms;
      },
      reject: ({ hd }) => {
        // A 403 from the system is an answer: the action reports it as a known rejection.
        hd.tickets.denyActor('agent');
        return 'permission_denied';
      },
      verifier: ({ hd }, state) => readPath(hd.tickets, state),
    },
    ...overrides,
  } satisfies MatrixHarness<TicketInput, Desk<TicketInput>>;
}
type TicketInput = { id: string; status: Ticket['status']; expectedVersion?: number };

const refundHarness = {
  action: contracts.refundOrder,
  input: { orderId: '42', amountCents: 1999 },
  otherInput: { orderId: '42', amountCents: 99_999 },
  invalidInput: { orderId: '42', amountCents: 'all of it' },
  setup() {
    const hd = desk();
    return { hd, clock: hd.clock, action: hd.actions.refundOrder, effects: () => hd.ledger.entries().length };
  },
  faults: {
    // The ledger has no soft-fail field: answer ok once without writing an entry.
    softFail: ({ hd }) =>
      once(hd.ledger, 'refund', () => async () => ({ ok: true, entryId: 'le-ghost', replayed: false })),
    loseRequest: ({ hd }) => {
      hd.ledger.faults.failNextWrite = true;
    },
    loseResponse: ({ hd }) => {
      hd.ledger.faults.loseNextResponse = true;
    },
    landLate: ({ hd }, ms) => {
      hd.ledger.faults.landNextWriteAfterMs = ms;
    },
    reject: ({ hd }) => {
      hd.ledger.rejectNext('insufficient_funds', 'the merchant balance cannot cover the refund');
      return 'insufficient_funds';
    },
    verifier: ({ hd }, state) => readPath(hd.ledger, state),
  },
} satisfies MatrixHarness<
  { orderId: string; amountCents: number },
  Desk<{ orderId: string; amountCents: number }>
>;

const email = { to: 'ana@example.com', subject: 'Your proposal', body: 'Attached.' };
const mailOutcome = { succeeded: 'delivered', failed: 'dropped', stuck: 'stuck' } as const;
const emailHarness = {
  action: contracts.sendEmail,
  input: email,
  otherInput: { ...email, subject: 'Another proposal' },
  invalidInput: { ...email, to: 'not an address' },
  setup() {
    const hd = desk();
    // Delivered mail is the effect; queued or dropped mail is not.
    return {
      hd,
      clock: hd.clock,
      action: hd.actions.sendEmail,
      effects: () => hd.mail.inbox(email.to).length,
    };
  },
  faults: {
    // Queued, says the provider, but nothing was stored: the lookup never finds it.
    softFail: ({ hd }) =>
      once(hd.mail, 'send', () => async () => ({ status: 'queued', messageId: 'msg-ghost' }) as const),
    loseRequest: ({ hd }) => {
      hd.mail.faults.failNextWrite = true;
    },
    loseResponse: ({ hd }) => {
      hd.mail.faults.loseNextResponse = true;
    },
    verifier: ({ hd }, state) => readPath(hd.mail, state),
    outcome: ({ hd }, outcome) => {
      hd.mail.faults.nextOutcome = mailOutcome[outcome];
    },
  },
} satisfies MatrixHarness<typeof email, Desk<typeof email>>;

const pageHarness = {
  action: contracts.pageOncall,
  input: { message: 'db down' },
  otherInput: { message: 'db back up' },
  invalidInput: { message: 42 },
  setup() {
    const hd = desk();
    return { hd, clock: hd.clock, action: hd.actions.pageOncall, effects: () => hd.pager.pages.length };
  },
  // The pager has no fault fields, so the hooks swap its method for one call.
  faults: {
    loseRequest: ({ hd }) =>
      once(hd.pager, 'page', () => async () => {
        throw transportError('pager.page');
      }),
    loseResponse: ({ hd }) =>
      once(hd.pager, 'page', (page) => async (message) => {
        await page(message);
        throw transportError('pager.page');
      }),
  },
} satisfies MatrixHarness<{ message: string }, Desk<{ message: string }>>;

/** Registers the cases with vitest the way the docs tell users to. */
function register(cases: MatrixCase[]): void {
  for (const c of cases) (c.skip ? it.skip : it)(c.name, c.run);
}

const skipped = (cases: MatrixCase[]) => cases.filter((c) => c.skip).map((c) => [c.name, c.skip]);
const named = (cases: MatrixCase[], part: string) => {
  const found = cases.filter((c) => c.name.includes(part));
  expect(found, `no case named like "${part}"`).toHaveLength(1);
  return found[0]!;
};

describe('completion matrix: update_ticket (committed, not safe to repeat)', () => {
  const cases = completionMatrix(ticketHarness());
  register(cases);

  it('runs every case its mode allows', () => {
    expect(cases.map((c) => c.name)).toEqual([
      'verified change: executes once, reads back, says so',
      'already satisfied: no_op, nothing executed',
      'write says ok but applies nothing: not verified',
      'invalid input: failed before anything runs',
      'known rejection: failed with the provider code, nothing applied',
      'same key, same input twice: one effect, the same completion',
      'same key, another input: idempotency_conflict, no second effect',
      'five concurrent runs with one key: one effect',
      'verifier down after execute: unknown (verifier_unavailable), then verified on poll',
      'verifier denied after execute: unknown (verification_denied), then verified on poll',
      'verifier hangs after execute: unknown (verifier_timeout), then verified on poll',
      'response lost after commit: verified by reading back, not retried',
      'request lost: unknown inside the window, failed (effect_absent) after it, never retried',
      'late landing inside the window: unknown, then verified on poll, no second execute',
    ]);
    expect(skipped(cases)).toEqual([]);
  });
});

describe('completion matrix: refund_order (committed, safe to repeat, provider-deduplicated)', () => {
  const cases = completionMatrix(refundHarness);
  register(cases);

  it('retries a lost request and skips only what the ledger cannot fake', () => {
    expect(named(cases, 'request lost').name).toBe(
      'request lost: unknown inside the window, retried once after it',
    );
    expect(skipped(cases)).toEqual([
      [
        'already satisfied: no_op, nothing executed',
        'the action has no before() baseline read, so it can never report no_op',
      ],
    ]);
  });
});

describe('completion matrix: send_email (accepted)', () => {
  const cases = completionMatrix(emailHarness);
  register(cases);

  it('adds the accepted-mode cases and skips the rest by name', () => {
    for (const part of [
      'succeeds',
      'fails at the provider',
      'never finishes',
      'wait: false',
      'while polling',
    ]) {
      expect(
        cases.some((c) => c.name.includes(part)),
        part,
      ).toBe(true);
    }
    expect(skipped(cases)).toEqual([
      [
        'already satisfied: no_op, nothing executed',
        'the action has no before() baseline read, so it can never report no_op',
      ],
      ['known rejection: failed with the provider code, nothing applied', 'needs the faults.reject hook'],
      [
        'late landing inside the window: unknown, then verified on poll, no second execute',
        'needs the faults.landLate hook',
      ],
    ]);
  });
});

describe('completion matrix: page_oncall (optimistic)', () => {
  const cases = completionMatrix({ ...pageHarness, name: 'pager' });
  register(cases);

  it('never expects verified and has no read-path cases', () => {
    expect(cases.map((c) => c.name)).toEqual([
      'pager: optimistic: a call that went out is never verified',
      'pager: invalid input: failed before anything runs',
      'pager: known rejection: failed with the provider code, nothing applied',
      'pager: same key, same input twice: one effect, the same completion',
      'pager: same key, another input: idempotency_conflict, no second effect',
      'pager: five concurrent runs with one key: one effect',
      'pager: optimistic: response lost: unknown, never retried',
      'pager: optimistic: request lost: unknown, never retried',
    ]);
    expect(skipped(cases)).toEqual([
      [
        'pager: known rejection: failed with the provider code, nothing applied',
        'needs the faults.reject hook',
      ],
    ]);
  });
});

describe('the matrix catches broken actions and harnesses', () => {
  /** update_ticket with a verifier that trusts the write: it echoes the response instead of reading the system. */
  function echoingSystem() {
    const hd = desk();
    const real = hd.actions.updateTicket;
    let echoed: Ticket | null = null;
    const action = defineAction({
      ...real,
      async execute(input, ctx) {
        const result = (await real.execute(input, ctx)) as TicketUpdateResult;
        if (result.ok) echoed = { ...(ctx.before as Ticket), status: input.status, version: result.version };
        return result;
      },
      observe: async () => echoed,
    });
    return { hd, clock: hd.clock, action, effects: () => hd.tickets.writes.length };
  }

  async function outcomes(cases: MatrixCase[]) {
    const failed: string[] = [];
    for (const c of cases.filter((k) => !k.skip)) await c.run().catch(() => failed.push(c.name));
    return failed;
  }

  it('a verifier that echoes the write is caught by the soft-fail and read-path cases', async () => {
    const failed = await outcomes(completionMatrix(ticketHarness({ setup: echoingSystem })));
    expect(failed).toEqual(
      expect.arrayContaining([
        'write says ok but applies nothing: not verified',
        'verifier down after execute: unknown (verifier_unavailable), then verified on poll',
        'verifier denied after execute: unknown (verification_denied), then verified on poll',
        'verifier hangs after execute: unknown (verifier_timeout), then verified on poll',
      ]),
    );
    // The happy path alone cannot tell an echo from a read: that is why the matrix exists.
    expect(failed).not.toContain('verified change: executes once, reads back, says so');
  });

  it('the failure says what was expected and what the runner reported', async () => {
    const softFail = named(completionMatrix(ticketHarness({ setup: echoingSystem })), 'applies nothing');
    await expect(softFail.run()).rejects.toThrow(
      'update_ticket, write says ok but applies nothing: not verified: run: got verified, attempt 1, next none; expected status failed',
    );
  });

  it('an effects() that counts attempts instead of applied writes is caught', async () => {
    const failed = await outcomes(
      completionMatrix(
        ticketHarness({
          setup() {
            const hd = desk();
            const attempts = () => hd.tickets.calls.filter((c) => c.method === 'update').length;
            return { hd, clock: hd.clock, action: hd.actions.updateTicket, effects: attempts };
          },
        }),
      ),
    );
    expect(failed).toEqual([
      'write says ok but applies nothing: not verified',
      'known rejection: failed with the provider code, nothing applied',
      'request lost: unknown inside the window, failed (effect_absent) after it, never retried',
      'late landing inside the window: unknown, then verified on poll, no second execute',
    ]);
  });

  it('an execute that retries on its own after a timeout is caught', async () => {
    const failed = await outcomes(
      completionMatrix(
        ticketHarness({
          setup() {
            const hd = desk();
            const real = hd.actions.updateTicket;
            const action = defineAction({
              ...real,
              // The bug readback exists to stop: a blind retry of a write that may already have landed.
              execute: (input, ctx) =>
                Promise.resolve(real.execute(input, ctx)).catch(() => real.execute(input, ctx)),
            });
            return { hd, clock: hd.clock, action, effects: () => hd.tickets.writes.length };
          },
        }),
      ),
    );
    expect(failed).toContain(
      'request lost: unknown inside the window, failed (effect_absent) after it, never retried',
    );
    expect(failed).toContain(
      'late landing inside the window: unknown, then verified on poll, no second execute',
    );
  });

  it('a per-case action that promises something else than harness.action is refused', async () => {
    const c = completionMatrix(
      ticketHarness({
        setup() {
          const hd = desk();
          return { hd, clock: hd.clock, action: hd.actions.updateTicket, effects: () => 0 };
        },
        action: defineAction({ ...contracts.updateTicket, safeToRepeat: true }),
      }),
    )[0]!;
    await expect(c.run()).rejects.toThrow(/safeToRepeat differs from harness.action/);
  });
});

describe('completionMatrix', () => {
  it('returns every hook-dependent case with a skip naming the hook it needs', () => {
    const bare = completionMatrix({
      action: contracts.updateTicket,
      input: { id: 'T-104', status: 'resolved' },
      setup: () => {
        const hd = desk();
        return { clock: hd.clock, action: hd.actions.updateTicket, effects: () => hd.tickets.writes.length };
      },
    });
    expect(bare.filter((c) => !c.skip).map((c) => c.name)).toEqual([
      'verified change: executes once, reads back, says so',
      'same key, same input twice: one effect, the same completion',
      'five concurrent runs with one key: one effect',
    ]);
    expect(new Set(bare.map((c) => c.skip).filter(Boolean))).toEqual(
      new Set([
        'needs the faults.alreadySatisfied hook',
        'needs the faults.softFail hook',
        'needs harness.invalidInput',
        'needs the faults.reject hook',
        'needs harness.otherInput',
        'needs the faults.verifier hook',
        'needs the faults.loseResponse hook',
        'needs the faults.loseRequest hook',
        'needs the faults.landLate hook',
      ]),
    );
  });

  it('skips the conflict case when the action keys each input separately', () => {
    const keyed = defineAction({
      ...contracts.refundOrder,
      idempotencyKey: (input) => `refund-${input.amountCents}`,
    });
    const c = named(completionMatrix({ ...refundHarness, action: keyed }), 'idempotency_conflict');
    expect(c.skip).toMatch(/gives otherInput a key of its own/);
  });

  it('refuses a harness without an action made by defineAction', () => {
    expect(() =>
      completionMatrix({ ...refundHarness, action: { ...contracts.refundOrder, kind: 'other' } as never }),
    ).toThrow(/harness.action: expected an action made by defineAction/);
  });
});
