import { describe, expect, it } from 'vitest';
import { createRunner, defineAction } from '../../src/index.js';

type Row = { id: string; owner: string | null; tenant: string };
const input = {
  '~standard': { version: 1 as const, vendor: 'test', validate: (value: unknown) => ({ value }) },
};

// An assignment on a table whose row starts with no owner (or in another tenant), read as the baseline too.
function assign(row: Row, extra: Record<string, unknown> = {}) {
  const state = { executed: 0 };
  const action = defineAction({
    name: 'assign_ticket',
    description: 'Assigns a ticket.',
    postcondition: 'The ticket has the owner.',
    input,
    target: () => `ticket:${row.id}`,
    before: async () => ({ ...row }),
    execute: async () => {
      state.executed++;
      row.owner = 'ana';
      return { ok: true };
    },
    observe: async () => ({ ...row }),
    expect: () => ({ owner: 'ana' }),
    scopeOf: (r: Row) => ({ tenant: r.tenant }),
    ...extra,
  });
  return { action, state };
}

const ctx = { runId: 'r', scope: { tenant: 'acme' } };

describe('the baseline hooks', () => {
  it('an async acceptable() does not make every call a no_op: the work runs and verifies', async () => {
    const row = { id: 'T-1', owner: null, tenant: 'acme' };
    const { action, state } = assign(row, { acceptable: async () => false });
    const c = await createRunner().run(action, {}, ctx);
    expect(c.status).toBe('verified');
    expect(state.executed).toBe(1);
    expect(row.owner).toBe('ana');
  });

  it('an acceptable() that throws runs nothing and says why (it ended store_unavailable)', async () => {
    const row = { id: 'T-2', owner: null, tenant: 'acme' };
    const { action, state } = assign(row, {
      acceptable: () => {
        throw new Error('hook broke');
      },
    });
    const c = await createRunner().run(action, {}, ctx);
    expect(c).toMatchObject({ status: 'failed', errorCode: 'invalid_expectation' });
    expect(c.reason).toContain('hook broke');
    expect(state.executed).toBe(0);
    expect(row.owner).toBeNull();
  });

  it('a target in another tenant asks the user, never offers a retry that would reach it again', async () => {
    const row = { id: 'T-3', owner: null, tenant: 'globex' };
    const { action, state } = assign(row, { safeToRepeat: true });
    const c = await createRunner().run(action, {}, ctx);
    expect(c).toMatchObject({ status: 'failed', errorCode: 'wrong_scope', nextAllowedAction: 'ask_user' });
    expect(state.executed).toBe(0);
  });
});
