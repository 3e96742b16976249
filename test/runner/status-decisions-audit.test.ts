import { describe, expect, it } from 'vitest';
import { accepted, createRunner, defineAction, freshness, memoryStore } from '../../src/index.js';
import { anyInput } from '../support/any-input.js';

interface Job {
  state: 'running' | 'succeeded' | 'failed';
  amount: number;
  by: string;
}

// A refund provider whose truth is known: the job last started on order 42, and the money actually moved.
function refunds(initial: Job) {
  const provider = { job: { ...initial }, moved: 0, started: 0 };
  const action = defineAction<{ amount: number }, Job>({
    name: 'refund',
    description: 'Refunds order 42.',
    postcondition: 'A refund of the amount succeeded.',
    input: anyInput as never,
    mode: 'accepted',
    target: () => 'order:42',
    before: async () => ({ ...provider.job }),
    execute: async (i) => {
      provider.started++;
      provider.moved += i.amount;
      provider.job = { state: 'succeeded', amount: i.amount, by: 'this call' };
      return accepted('job-mine');
    },
    observe: async () => ({ ...provider.job }),
    expect: (i) => ({ amount: i.amount }),
    terminal: (j) => j.state,
    poll: { initialDelayMs: 1, maxDelayMs: 1, maxDurationMs: 1_000 },
  });
  return { provider, action };
}

describe('accepted mode baseline', () => {
  it("another run's still-running job with matching fields is not a no_op, and nothing runs beside it", async () => {
    const { provider, action } = refunds({ state: 'running', amount: 10, by: 'another run' });
    const store = memoryStore();
    const runner = createRunner({ store });
    const c = await runner.run(action, { amount: 10 }, { runId: 'r1', idempotencyKey: 'k1' });
    // The truth: the other job has not finished (it may fail); this call moved no money.
    expect(provider.started).toBe(0);
    expect(provider.moved).toBe(0);
    expect(c.status).not.toBe('no_op');
    expect(c).toMatchObject({ status: 'failed', errorCode: 'target_busy', nextAllowedAction: 'retry' });
    expect(c.safeToRepeat).toBe(true);
    const stored = await store.get(c.operationId);
    expect(stored?.lifecycle).toBe('requested');
    expect(stored?.status).toBe('failed');

    // The other job fails: the same call, under the same key, now runs the refund once and verifies it.
    provider.job = { state: 'failed', amount: 10, by: 'another run' };
    const again = await runner.run(action, { amount: 10 }, { runId: 'r1', idempotencyKey: 'k1' });
    expect(provider.started).toBe(1);
    expect(provider.moved).toBe(10);
    expect(again.operationId).toBe(c.operationId);
    expect(again.status).toBe('verified');
    expect((await store.get(c.operationId))?.status).toBe('verified');
  });

  it('an acceptable() that accepts a running job still makes a no_op (the user declared that state fine)', async () => {
    const { provider, action } = refunds({ state: 'running', amount: 10, by: 'another run' });
    const tolerant = defineAction({ ...action, mode: 'accepted', acceptable: () => true } as never);
    const c = await createRunner().run(tolerant, { amount: 10 }, { runId: 'r' });
    expect(provider.started).toBe(0);
    expect(c.status).toBe('no_op');
  });
});

interface Ticket {
  id: string;
  status: string;
  assignee?: string;
  tenant?: number | string;
}

function tickets(expect: (input: Record<string, unknown>) => unknown, extra: Record<string, unknown> = {}) {
  const row: Ticket = { id: 'T-1', status: 'open' };
  let writes = 0;
  const action = defineAction<Record<string, unknown>, Ticket>({
    name: 'assign',
    description: 'Assigns a ticket.',
    postcondition: 'The ticket has the assignee.',
    input: anyInput as never,
    target: () => 'ticket:T-1',
    execute: async () => {
      writes++; // the write is lost: the ticket stays unassigned
      return { ok: true };
    },
    observe: async () => ({ ...row }),
    expect: expect as never,
    ...extra,
  });
  return { row, action, writes: () => writes };
}

describe('expected values that prove nothing', () => {
  it('an expected field left undefined (a misspelt input field) does not verify an unassigned ticket', async () => {
    const { row, action, writes } = tickets((i) => ({ assignee: i.asignee }));
    const c = await createRunner().run(action, { assignee: 'ana' }, { runId: 'r' });
    expect(writes()).toBe(1);
    expect(row.assignee).toBeUndefined();
    expect(c.status).not.toBe('verified');
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'invalid_expectation' });
    expect(c.reason).toMatch(/"assignee".*undefined/);
  });

  it('a batch unit expecting undefined does not pass on a row without the field', async () => {
    const { row, action } = tickets((i) => [
      { target: 'T-1', expected: { assignee: i.asignee }, observed: { id: 'T-1', status: 'open' } },
    ]);
    const c = await createRunner().run(action, { assignee: 'ana' }, { runId: 'r' });
    expect(row.assignee).toBeUndefined();
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'invalid_expectation' });
  });

  it('a baseline expecting undefined is not a no_op: nothing is claimed, nothing runs', async () => {
    const { action, writes } = tickets((i) => ({ assignee: i.asignee }), {
      before: async () => ({ id: 'T-1', status: 'open' }),
    });
    const c = await createRunner().run(action, { assignee: 'ana' }, { runId: 'r' });
    expect(writes()).toBe(0);
    expect(c).toMatchObject({ status: 'failed', errorCode: 'invalid_expectation' });
  });

  it('an async expect() is named as such', async () => {
    const { action } = tickets(async () => ({ status: 'open' }));
    const c = await createRunner().run(action, {}, { runId: 'r' });
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'invalid_expectation' });
    expect(c.reason).toMatch(/promise/);
  });
});

describe('scope', () => {
  it('an async scopeOf() does not fail a write that landed in the right tenant as another scope', async () => {
    const row = { id: 'T-1', status: 'open', tenant: 'acme' };
    const action = defineAction<{ status: string }, typeof row>({
      name: 'set_status',
      description: 'Sets a status.',
      postcondition: 'The ticket has the status.',
      input: anyInput as never,
      target: () => 'ticket:T-1',
      execute: async (i) => {
        row.status = i.status;
        return { ok: true };
      },
      observe: async () => ({ ...row }),
      expect: (i) => ({ status: i.status }),
      scopeOf: (async (o: typeof row) => ({ tenant: o.tenant })) as never,
    });
    const c = await createRunner().run(
      action,
      { status: 'closed' },
      { runId: 'r', scope: { tenant: 'acme' } },
    );
    // The truth: the write landed, in the run's own tenant.
    expect(row.status).toBe('closed');
    expect(c.errorCode).not.toBe('wrong_scope');
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'invalid_expectation' });
    expect(c.reason).toMatch(/scopeOf\(\) returned a promise/);
  });
});

describe('accepted mode baseline: what terminal() says', () => {
  it('a state terminal() does not know (queued) is not a no_op, and nothing runs on it', async () => {
    const { provider, action } = refunds({ state: 'running', amount: 10, by: 'another run' });
    provider.job = { state: 'queued' as never, amount: 10, by: 'another run' };
    const c = await createRunner().run(action, { amount: 10 }, { runId: 'r' });
    expect(provider.started).toBe(0);
    expect(provider.moved).toBe(0);
    expect(c.status).not.toBe('no_op');
    expect(c).toMatchObject({ status: 'failed', errorCode: 'invalid_expectation' });
    expect(c.reason).toMatch(/terminal\(\) returned queued/);
  });

  it('a succeeded job with matching fields is still a no_op (the end state holds on this target)', async () => {
    const { provider, action } = refunds({ state: 'succeeded', amount: 10, by: 'an earlier call' });
    const c = await createRunner().run(action, { amount: 10 }, { runId: 'r' });
    expect(provider.started).toBe(0);
    expect(c.status).toBe('no_op');
  });
});

describe('an ambiguous execute whose write is visible', () => {
  // The truth: the provider applied the write (tagged with this operation) but normalized the value, then the
  // connection dropped before the answer came back.
  function normalizingDesk() {
    const row = { id: 'T-1', status: 'open', audit: [] as string[] };
    let writes = 0;
    const action = defineAction<{ status: string }, typeof row>({
      name: 'set_status',
      description: 'Sets a status.',
      postcondition: 'The ticket has the status.',
      input: anyInput as never,
      target: () => 'ticket:T-1',
      safeToRepeat: true,
      maxInFlightMs: 1,
      execute: async (i, ctx) => {
        writes++;
        row.status = i.status.toLowerCase();
        row.audit.push(ctx.operationId);
        throw new Error('ECONNRESET');
      },
      observe: async () => ({ ...row, audit: [...row.audit] }),
      expect: (i) => ({ status: i.status }),
      fresh: freshness.auditEvent((o) => o.audit),
    });
    return { row, action, writes: () => writes };
  }

  it('a mismatch provably this operation’s is a mismatch, not "did not land", and is not executed again', async () => {
    const { row, action, writes } = normalizingDesk();
    const c = await createRunner().run(action, { status: 'Closed' }, { runId: 'r' });
    expect(row.status).toBe('closed');
    expect(row.audit).toHaveLength(1);
    expect(writes()).toBe(1);
    expect(c.errorCode).not.toBe('effect_absent');
    expect(c).toMatchObject({
      status: 'failed',
      errorCode: 'readback_mismatch',
      nextAllowedAction: 'repair',
    });
  });

  it('a newer update time is anyone’s write: within the window the outcome stays unknown', async () => {
    // The truth: another writer touched the ticket; this call's write may still land.
    const row = { id: 'T-1', status: 'pending', updatedAt: 0 };
    const action = defineAction<{ status: string }, typeof row>({
      name: 'set_status',
      description: 'Sets a status.',
      postcondition: 'The ticket has the status.',
      input: anyInput as never,
      target: () => 'ticket:T-1',
      maxInFlightMs: 60_000,
      execute: async () => {
        row.updatedAt = Date.now() + 1_000;
        throw new Error('ECONNRESET');
      },
      observe: async () => ({ ...row }),
      expect: (i) => ({ status: i.status }),
      fresh: freshness.updatedAfterStart((o) => o.updatedAt),
    });
    const c = await createRunner().run(action, { status: 'closed' }, { runId: 'r' });
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'in_flight' });
  });
});

describe('accepted mode reads of another tenant’s job', () => {
  // The truth: this call's job runs in tenant acme; the verifier reads a job of tenant globex.
  function crossedJobs(theirs: Job['state']) {
    const ours: Job & { tenant: string } = { state: 'running', amount: 10, by: 'this call', tenant: 'acme' };
    const other: Job & { tenant: string } = { state: theirs, amount: 10, by: 'globex', tenant: 'globex' };
    const action = defineAction<{ amount: number }, typeof other>({
      name: 'refund',
      description: 'Refunds order 42.',
      postcondition: 'A refund of the amount succeeded.',
      input: anyInput as never,
      mode: 'accepted',
      target: () => 'order:42',
      execute: async () => accepted('job-mine'),
      observe: async () => ({ ...other }),
      expect: (i) => ({ amount: i.amount }),
      terminal: (j) => j.state,
      scopeOf: (j) => ({ tenant: j.tenant }),
      poll: { initialDelayMs: 1, maxDelayMs: 1, maxDurationMs: 200, maxReads: 5 },
    });
    return { ours, action };
  }

  it('its failure does not fail this call as the provider’s: it is the wrong scope', async () => {
    const { ours, action } = crossedJobs('failed');
    const c = await createRunner().run(action, { amount: 10 }, { runId: 'r', scope: { tenant: 'acme' } });
    expect(ours.state).toBe('running');
    expect(c.errorCode).not.toBe('provider_failed');
    expect(c).toMatchObject({ status: 'failed', errorCode: 'wrong_scope', nextAllowedAction: 'ask_user' });
  });

  it('its running state decides nothing: this call’s own job is followed to its end', async () => {
    const { ours, action } = crossedJobs('running');
    let reads = 0;
    const followed = defineAction({
      ...action,
      observe: async () =>
        ++reads < 3 ? action.observe!({ amount: 10 }, {} as never) : { ...ours, state: 'succeeded' },
    } as never);
    const c = await createRunner().run(followed, { amount: 10 }, { runId: 'r', scope: { tenant: 'acme' } });
    expect(reads).toBe(3);
    expect(c.status).toBe('verified');
  });
});

describe('accepted mode: a failed job that does not state its scope', () => {
  it('is the provider’s failure, not another scope', async () => {
    const job = {
      state: 'failed' as Job['state'],
      amount: 10,
      result: undefined as { tenant: string } | undefined,
    };
    const action = defineAction<{ amount: number }, typeof job>({
      name: 'refund',
      description: 'Refunds order 42.',
      postcondition: 'A refund of the amount succeeded.',
      input: anyInput as never,
      mode: 'accepted',
      target: () => 'order:42',
      execute: async () => accepted('job-mine'),
      observe: async () => ({ ...job }),
      expect: (i) => ({ amount: i.amount }),
      terminal: (j) => j.state,
      // Only a finished job carries its tenant, in its result.
      scopeOf: (j) => ({ tenant: j.result?.tenant as string }),
      poll: { initialDelayMs: 1, maxDelayMs: 1, maxDurationMs: 1_000 },
    });
    const c = await createRunner().run(action, { amount: 10 }, { runId: 'r', scope: { tenant: 'acme' } });
    expect(c).toMatchObject({ status: 'failed', errorCode: 'provider_failed' });
  });
});
