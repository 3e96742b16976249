// Approvals on one Postgres database shared by two runners (two pools: two "processes").
import { describe, expect, it } from 'vitest';
import { createRunner, defineAction, ReadbackError, resolveByOperator } from '../../src/index.js';
import { postgresStore } from '../../src/postgres/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { PG_URL, pgSuite } from '../postgres/support.js';
import { callsTo, ctx } from './support.js';

const { available, tempSchema } = await pgSuite();
const input = { id: 'T-104', status: 'closed' as const };

async function twoRunners() {
  const schema = tempSchema();
  const a = await postgresStore({ connectionString: PG_URL, schema });
  const b = await postgresStore({ connectionString: PG_URL, schema });
  const hd = createHelpdesk();
  hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
  const closeTicket = defineAction({
    ...hd.actions.updateTicket,
    name: 'close_ticket',
    needsApproval: () => true,
  });
  const r1 = createRunner({ store: a, clock: hd.clock, actions: [closeTicket] });
  const r2 = createRunner({ store: b, clock: hd.clock, actions: [closeTicket] });
  const close = async () => {
    await a.close();
    await b.close();
  };
  return { a, hd, closeTicket, r1, r2, close };
}

describe.skipIf(!available)('approvals on Postgres', () => {
  it('racing decisions from two runners: one is recorded; then racing runs and polls execute once', async () => {
    const { a, hd, closeTicket, r1, r2, close } = await twoRunners();
    const parked = await r1.run(closeTicket, input, ctx);
    const fingerprint = String(parked.evidence?.fingerprint);
    const decisions = await Promise.allSettled([
      r1.approve(parked.operationId, { by: 'ana', fingerprint }),
      r2.approve(parked.operationId, { by: 'bo', fingerprint }),
      r2.reject(parked.operationId, { by: 'cy', fingerprint }),
    ]);
    const won = decisions.filter((d) => d.status === 'fulfilled');
    expect(won).toHaveLength(1);
    for (const d of decisions) {
      if (d.status === 'rejected') expect(d.reason).toMatchObject({ code: 'not_awaiting_approval' });
    }
    const events = await a.events(parked.operationId);
    expect(events.filter((e) => e.type === 'approved' || e.type === 'rejected')).toHaveLength(1);

    await Promise.all([
      r1.run(closeTicket, input, ctx),
      r2.run(closeTicket, input, ctx),
      r1.poll(parked.operationId),
      r2.poll(parked.operationId),
    ]);
    const approved = (won[0] as PromiseFulfilledResult<{ status: string }>).value.status === 'pending';
    expect(callsTo(hd.tickets, 'update')).toHaveLength(approved ? 1 : 0);
    await close();
  });

  // Postgres jsonb refuses \u0000 and lone surrogates: such a note used to surface as pg's raw error
  // ("unsupported Unicode escape sequence") from approve/reject/resolve. It is now refused up front.
  it('a note Postgres cannot store is refused as misuse, not with a driver error', async () => {
    const { a, hd, closeTicket, r1, close } = await twoRunners();
    const parked = await r1.run(closeTicket, input, ctx);
    const fingerprint = String(parked.evidence?.fingerprint);
    for (const note of ['bad\u0000note', 'lone \ud800 half']) {
      const error = await r1.reject(parked.operationId, { by: 'lee', note, fingerprint }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ReadbackError);
      expect(error).toMatchObject({ code: 'invalid_options', field: 'decision.note' });
      await expect(
        resolveByOperator(a, parked.operationId, { status: 'failed', note, by: 'op' }, hd.clock.now()),
      ).rejects.toMatchObject({ code: 'invalid_options', field: 'note' });
    }
    expect((await a.get(parked.operationId))?.lifecycle).toBe('awaiting_approval');
    await close();
  });
});
