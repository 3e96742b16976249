// The README quickstart, type-checked by `npm test` (tsc covers examples/) so the README cannot drift.
// `npm run demo` is the runnable tour.
import { z } from 'zod';
import { createRunner, defineAction, freshness, guardAnswer } from '../src/index.js';

interface Ticket {
  id: string;
  tenant: string;
  status: string;
  version: number;
}

/** A stand-in for your ticket system's client. */
declare const tickets: {
  get(id: string): Promise<Ticket | null>;
  update(id: string, patch: { status: string }, meta: { opId: string }): Promise<unknown>;
};

const resolveTicket = defineAction({
  name: 'resolve_ticket',
  description: 'Resolve a helpdesk ticket.',
  input: z.object({ id: z.string() }),
  target: ({ id }) => `ticket:${id}`,
  postcondition: 'The ticket reads back as resolved, written after this run started.',
  before: ({ id }) => tickets.get(id), // baseline: already resolved → no_op
  execute: ({ id }, ctx) => tickets.update(id, { status: 'resolved' }, { opId: ctx.operationId }),
  observe: ({ id }) => tickets.get(id), // the system of record, never the write's reply
  expect: () => ({ status: 'resolved' }),
  fresh: freshness.versionAbove((t: Ticket) => t.version), // an old matching copy is not proof
  targetOf: (t) => `ticket:${t.id}`, // the record read must be the requested one
  scopeOf: (t) => ({ tenant: t.tenant }), // must match ctx.scope
});

export async function quickstart() {
  const runner = createRunner(); // memory store by default
  const c = await runner.run(
    resolveTicket,
    { id: 'T-104' },
    { runId: 'run-7f2c', scope: { tenant: 'acme' } },
  );
  return { status: c.status, message: c.message, guard: guardAnswer('Done — T-104 is resolved.', [c]) };
}
