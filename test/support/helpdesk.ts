// Fixtures shared by the integration tests (AI SDK, OpenAI Agents, MCP): the helpdesk they drive, and the
// assign_ticket action each of them lists with a third-party input schema (zod, ArkType).
import type { StepContext } from '../../src/contract/types.js';
import { createRunner, defineAction, type RunnerOptions } from '../../src/index.js';
import type { StandardSchemaV1 } from '../../src/schema.js';
import { createHelpdesk, FakeClock, FakeTicketSystem } from '../../src/testing/index.js';

/** A helpdesk with two acme tickets (T-104 open, T-105 resolved) and a runner on its clock. */
export function helpdesk(options: Omit<RunnerOptions, 'clock' | 'random'> = {}) {
  const hd = createHelpdesk();
  const runner = createRunner({ clock: hd.clock, random: () => 0.5, ...options });
  hd.tickets.seed([
    { id: 'T-104', tenant: 'acme' },
    { id: 'T-105', tenant: 'acme', status: 'resolved' },
  ]);
  return { hd, runner };
}

/** A fake clock and a ticket system on it holding one open acme ticket, T-1. */
export function oneTicket() {
  const clock = new FakeClock();
  const tickets = new FakeTicketSystem({ clock });
  tickets.seed([{ id: 'T-1', tenant: 'acme' }]);
  return { clock, tickets };
}

/**
 * An assign_ticket action (safe to repeat) over `tickets`, validating with `input` and writing as
 * `tenantOf(ctx)`, the run's scope tenant by default.
 */
export function assignTicket(
  tickets: FakeTicketSystem,
  input: StandardSchemaV1<unknown, { id: string; assignee: string }>,
  tenantOf: (ctx: StepContext) => string = (ctx) => ctx.scope.tenant ?? '',
) {
  return defineAction({
    name: 'assign_ticket',
    description: 'Assign a ticket.',
    input,
    target: (input) => `ticket:${input.id}`,
    postcondition: 'The ticket is assigned to the requested person.',
    execute: (input, ctx) =>
      tickets.update(
        input.id,
        { assignee: input.assignee },
        { tenant: tenantOf(ctx), operationId: ctx.operationId },
      ),
    observe: (input) => tickets.get(input.id),
    expect: (input) => ({ assignee: input.assignee }),
    safeToRepeat: true,
  });
}
