// An operator's decision is a compare-and-set on the record it was made from; a policy that does not answer false
// sends the call to a reviewer.
import { describe, expect, it } from 'vitest';
import {
  createRunner,
  defineAction,
  memoryStore,
  type OperationStore,
  resolveByOperator,
} from '../../src/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { callsTo, ctx } from './support.js';

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const input = { id: 'T-104', status: 'closed' as const };

describe('operator resolution racing a live run', () => {
  it('an operator decision made on a "requested, nothing ran" view is not applied once the run has executed', async () => {
    const inner = memoryStore();
    // Hold the operator's write until we say so (the operator's CLI is slow / another host).
    const operatorWrite = deferred();
    const operatorWriting = deferred();
    const store: OperationStore = {
      ...inner,
      transition: async (id, from, patch, event, guard) => {
        if (event.type === 'operator_resolved') {
          operatorWriting.resolve();
          await operatorWrite.promise;
        }
        return inner.transition(id, from, patch, event, guard);
      },
    };
    const hd = createHelpdesk();
    hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
    const executing = deferred();
    const finishExecute = deferred();
    const closeTicket = defineAction({
      ...hd.actions.updateTicket,
      name: 'close_ticket',
      needsApproval: () => true,
      async execute(i, c) {
        const result = await hd.actions.updateTicket.execute(i, c);
        executing.resolve();
        await finishExecute.promise;
        return result;
      },
    });
    const runner = createRunner({ store, clock: hd.clock, random: () => 0.5, actions: [closeTicket] });
    const parked = await runner.run(closeTicket, input, ctx);
    await runner.approve(parked.operationId, {
      by: 'maria',
      fingerprint: String(parked.evidence?.fingerprint),
    });
    expect((await store.get(parked.operationId))?.lifecycle).toBe('requested');

    // The operator looks at it: approved, requested, nothing executed: cancel it.
    const resolution = resolveByOperator(
      store,
      parked.operationId,
      { status: 'failed', note: 'nothing ran yet; cancelling', by: 'ops' },
      hd.clock.now(),
    ).then(
      (c) => ({ ok: true as const, c }),
      (e: unknown) => ({ ok: false as const, e }),
    );
    await operatorWriting.promise;

    // Meanwhile the agent's next run executes it (the effect lands).
    const run = runner.run(closeTicket, input, ctx);
    await executing.promise;
    expect((await store.get(parked.operationId))?.lifecycle).toBe('executing');

    // The operator's write goes through now.
    operatorWrite.resolve();
    const resolved = await resolution;
    finishExecute.resolve();
    const agent = await run;

    expect(callsTo(hd.tickets, 'update')).toHaveLength(1);
    expect((await hd.tickets.get('T-104'))?.status).toBe('closed');
    const record = await store.get(parked.operationId);
    const last = (await store.events(parked.operationId)).at(-1);
    const summary = {
      resolved: resolved.ok ? `${resolved.c.status} attempt=${resolved.c.attempt}` : 'refused',
      record: `${record?.status} ${record?.completion?.errorCode} attempt=${record?.attempt} completion.attempt=${record?.completion?.attempt}`,
      agent: `${agent.status} ${agent.errorCode}`,
      lastEvent: last,
    };
    // The operator's decision was made on a view that no longer holds: refused, and the run verifies the effect.
    expect(resolved.ok, JSON.stringify(summary, null, 1)).toBe(false);
    if (!resolved.ok)
      expect(resolved.e).toMatchObject({
        code: 'store_conflict',
        message: expect.stringMatching(/moved on while it was being resolved/),
      });
    expect(agent.status).toBe('verified');
  });
});

describe('approval policy answers', () => {
  for (const answer of [1, 'yes', { required: true }]) {
    it(`a policy answering ${JSON.stringify(answer)} does not execute the call unreviewed`, async () => {
      const hd = createHelpdesk();
      hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
      const closeTicket = defineAction({
        ...hd.actions.updateTicket,
        name: 'close_ticket',
        needsApproval: (() => answer) as unknown as () => boolean,
      });
      const runner = createRunner({ clock: hd.clock, random: () => 0.5 });
      const c = await runner.run(closeTicket, { id: 'T-104', status: 'closed' }, ctx);
      expect(callsTo(hd.tickets, 'update')).toEqual([]);
      expect(c.errorCode).toBe('awaiting_approval');
    });
  }
});

describe('an approval policy that never answers', () => {
  it('sends the call to a reviewer after verifyTimeoutMs instead of holding the run open', async () => {
    const hd = createHelpdesk();
    hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
    const closeTicket = defineAction({
      ...hd.actions.updateTicket,
      name: 'close_ticket',
      verifyTimeoutMs: 2_000,
      needsApproval: () => new Promise<boolean>(() => {}),
    });
    const runner = createRunner({ clock: hd.clock, random: () => 0.5 });
    const run = runner.run(closeTicket, { id: 'T-104', status: 'closed' }, ctx);
    await hd.clock.advance(2_000);
    const c = await run;
    expect(c).toMatchObject({ status: 'pending', errorCode: 'awaiting_approval' });
    expect(callsTo(hd.tickets, 'update')).toEqual([]);
  });
});
