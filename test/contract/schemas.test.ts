import { type } from 'arktype';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { StandardSchemaV1 } from '../../src/index.js';
import { createRunner, defineAction } from '../../src/index.js';
import { FakeClock } from '../../src/testing/fakes/fake-clock.js';

interface TicketInput {
  id: string;
  status: 'open' | 'resolved';
  note: string;
  meta?: { priority: number } | undefined;
}

interface Ticket {
  id: string;
  status: string;
  note: string;
}

/** A tiny ticket system that counts its calls, so tests can prove nothing was executed. */
class TinyTickets {
  readonly tickets = new Map<string, Ticket>([['T-1', { id: 'T-1', status: 'open', note: '' }]]);
  readonly updates: TicketInput[] = [];
  reads = 0;

  update(input: TicketInput): { ok: true } {
    this.updates.push(input);
    const ticket = this.tickets.get(input.id);
    if (ticket) this.tickets.set(input.id, { ...ticket, status: input.status, note: input.note });
    return { ok: true };
  }

  get(id: string): Ticket | null {
    this.reads++;
    return this.tickets.get(id) ?? null;
  }
}

/** The same contract for every schema library; only `input` differs. */
function ticketAction(name: string, input: StandardSchemaV1<unknown, TicketInput>, fake: TinyTickets) {
  return defineAction<TicketInput, Ticket>({
    name,
    description: 'Set the status of a ticket.',
    input,
    target: (i) => `ticket:${i.id}`,
    postcondition: 'The ticket has the requested status and note.',
    execute: async (i) => fake.update(i),
    observe: async (i) => fake.get(i.id),
    expect: (i) => ({ status: i.status, note: i.note }),
  });
}

const libraries: [string, () => StandardSchemaV1<unknown, TicketInput>][] = [
  [
    'zod 4',
    () =>
      z.object({
        id: z.string().trim().min(1),
        status: z.enum(['open', 'resolved']),
        note: z.string().default('none'),
        meta: z.object({ priority: z.number() }).optional(),
      }),
  ],
  [
    'valibot',
    () =>
      v.object({
        id: v.pipe(v.string(), v.trim(), v.minLength(1)),
        status: v.picklist(['open', 'resolved']),
        note: v.optional(v.string(), 'none'),
        meta: v.optional(v.object({ priority: v.number() })),
      }),
  ],
  [
    'arktype',
    () =>
      type({
        id: 'string.trim',
        status: "'open' | 'resolved'",
        note: "string = 'none'",
        'meta?': { priority: 'number' },
      }) as unknown as StandardSchemaV1<unknown, TicketInput>,
  ],
];

const ctx = { runId: 'run-schemas' };

describe.each(libraries)('input validated by %s', (lib, makeSchema) => {
  const setup = () => {
    const fake = new TinyTickets();
    const runner = createRunner({ clock: new FakeClock(), random: () => 0.5 });
    const action = ticketAction(`update_ticket_${lib.replace(/\W/g, '_')}`, makeSchema(), fake);
    return { fake, runner, action };
  };

  it('valid input runs and is verified', async () => {
    const { fake, runner, action } = setup();
    const c = await runner.run(action, { id: 'T-1', status: 'resolved', note: 'fixed' }, ctx);
    expect(c.status).toBe('verified');
    expect(c.target).toBe('ticket:T-1');
    expect(fake.updates).toHaveLength(1);
    expect(fake.tickets.get('T-1')).toEqual({ id: 'T-1', status: 'resolved', note: 'fixed' });
  });

  it('execute receives the schema output: trimmed strings and defaults filled', async () => {
    const { fake, runner, action } = setup();
    const c = await runner.run(action, { id: '  T-1  ', status: 'resolved' }, ctx);
    expect(c.status).toBe('verified');
    expect(fake.updates).toEqual([{ id: 'T-1', status: 'resolved', note: 'none' }]);
    // The target and the recorded input come from the output, not the raw input.
    expect(c.target).toBe('ticket:T-1');
    expect((await runner.store.get(c.operationId))?.input).toEqual({
      id: 'T-1',
      status: 'resolved',
      note: 'none',
    });
  });

  it('an invalid field fails with invalid_input naming the field, and executes nothing', async () => {
    const { fake, runner, action } = setup();
    const c = await runner.run(action, { id: 'T-1', status: 'done' }, ctx);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('invalid_input');
    expect(c.reason).toMatch(/^status: /);
    expect(c.nextAllowedAction).toBe('repair');
    expect(c.safeToRepeat).toBe(true);
    expect(c.attempt).toBe(0);
    expect(fake.updates).toHaveLength(0);
    expect(fake.reads).toBe(0);
  });

  it('a nested invalid field is named by its dotted path', async () => {
    const { fake, runner, action } = setup();
    const c = await runner.run(action, { id: 'T-1', status: 'open', meta: { priority: 'high' } }, ctx);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('invalid_input');
    expect(c.reason).toMatch(/(^|; )meta\.priority: /);
    expect(fake.updates).toHaveLength(0);
  });

  it('several invalid fields are all reported', async () => {
    const { fake, runner, action } = setup();
    const c = await runner.run(action, { id: 7, status: 'done' }, ctx);
    expect(c.errorCode).toBe('invalid_input');
    expect(c.reason).toMatch(/(^|; )id: /);
    expect(c.reason).toMatch(/(^|; )status: /);
    expect(fake.updates).toHaveLength(0);
  });

  it('a non-object input fails without executing', async () => {
    const { fake, runner, action } = setup();
    for (const input of [null, 'T-1', 42, undefined]) {
      const c = await runner.run(action, input, ctx);
      expect(c.status).toBe('failed');
      expect(c.errorCode).toBe('invalid_input');
    }
    expect(fake.updates).toHaveLength(0);
    expect(await runner.store.list({})).toEqual([]);
  });
});

describe('async schemas', () => {
  const asyncSchema = () =>
    z.object({ id: z.string(), status: z.enum(['open', 'resolved']), note: z.string().default('') }).refine(
      async (input) => {
        await new Promise((resolve) => setTimeout(resolve, 1));
        return input.id !== 'T-locked';
      },
      { message: 'ticket is locked', path: ['id'] },
    );

  it('a zod schema with an async refinement validates through Standard Schema', async () => {
    const fake = new TinyTickets();
    const runner = createRunner({ clock: new FakeClock() });
    const action = ticketAction('update_ticket_async', asyncSchema(), fake);
    // zod's Standard Schema validate returns a promise when the schema is async.
    expect(asyncSchema()['~standard'].validate({ id: 'T-1', status: 'open' })).toBeInstanceOf(Promise);

    const ok = await runner.run(action, { id: 'T-1', status: 'resolved' }, ctx);
    expect(ok.status).toBe('verified');
    expect(fake.updates).toEqual([{ id: 'T-1', status: 'resolved', note: '' }]);
  });

  it('an async refinement that fails gives invalid_input naming the field, nothing executed', async () => {
    const fake = new TinyTickets();
    const runner = createRunner({ clock: new FakeClock() });
    const action = ticketAction('update_ticket_async', asyncSchema(), fake);
    const c = await runner.run(action, { id: 'T-locked', status: 'resolved' }, ctx);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('invalid_input');
    expect(c.reason).toBe('id: ticket is locked');
    expect(fake.updates).toHaveLength(0);
  });

  it('a schema whose validate throws or rejects gives invalid_input, nothing executed', async () => {
    const fake = new TinyTickets();
    const runner = createRunner({ clock: new FakeClock() });
    const throwing: StandardSchemaV1<unknown, TicketInput> = {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: () => {
          throw new Error('schema exploded');
        },
      },
    };
    const rejecting: StandardSchemaV1<unknown, TicketInput> = {
      '~standard': { version: 1, vendor: 'test', validate: () => Promise.reject(new Error('schema down')) },
    };
    const a = await runner.run(ticketAction('throwing_schema', throwing, fake), {}, ctx);
    const b = await runner.run(ticketAction('rejecting_schema', rejecting, fake), {}, ctx);
    expect(a).toMatchObject({ status: 'failed', errorCode: 'invalid_input' });
    expect(a.reason).toMatch(/schema exploded/);
    expect(b).toMatchObject({ status: 'failed', errorCode: 'invalid_input' });
    expect(b.reason).toMatch(/schema down/);
    expect(fake.updates).toHaveLength(0);
  });
});
