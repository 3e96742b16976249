import { describe, expect, it } from 'vitest';
import { auditActions } from '../../src/audit/audit.js';
import { defineAction, freshness } from '../../src/index.js';
import { schema } from '../../src/testing/schema.js';
import { runCli } from '../cli/support.js';

type Row = { id: string; tenant: string; events: { operationId: string }[] };

// Clean on every other question, so the identity finding is the only one that can change.
const ticket = (extra: Record<string, unknown>) =>
  defineAction({
    name: 'resolve_ticket',
    description: 'Resolve a ticket.',
    system: 'helpdesk tickets API',
    input: schema({ id: 'string' }),
    target: ({ id }: { id: string }) => `ticket:${id}`,
    postcondition: 'The ticket reads back as resolved.',
    execute: () => ({ ok: true }),
    observe: () => null,
    expect: () => ({ status: 'resolved' }),
    fresh: freshness.auditEvent((t: Row) => t.events),
    safeToRepeat: false,
    ...extra,
  } as never);

function identityOf(extra: Record<string, unknown>) {
  const found = auditActions([ticket(extra)])[0]?.findings.find((f) => f.question === 'identity');
  if (found === undefined) throw new Error('no identity finding');
  return found;
}

const targetOf = (t: Row) => `ticket:${t.id}`;
const scopeOf = (t: Row) => ({ tenant: t.tenant });

describe('audit: what proves the observed record is the requested one', () => {
  it('scopeOf alone is debt: it proves the scope, not that the record is target(input)', () => {
    const found = identityOf({ scopeOf });
    expect(found.verdict).toBe('debt');
    expect(found.answer).toContain('nothing compares the observed record with target(input)');
    expect(found.fix).toContain('declare targetOf(observed)');
    expect(found.fix).not.toContain('scopeOf');
  });

  it('targetOf with scopeOf answers it, and says so', () => {
    const found = identityOf({ targetOf, scopeOf });
    expect(found.verdict).toBe('answered');
    expect(found.answer).toContain('targetOf(observed) must equal target(input)');
    expect(found.answer).toContain('scopeOf(observed)');
  });

  it('targetOf without scopeOf is still debt for the scope, with only the scope fix', () => {
    const found = identityOf({ targetOf });
    expect(found.verdict).toBe('debt');
    expect(found.answer).toContain('scope');
    expect(found.fix).toBe('declare scopeOf(observed) so a record from another scope cannot pass');
  });

  it('neither: both fixes are named', () => {
    const found = identityOf({});
    expect(found.verdict).toBe('debt');
    expect(found.fix).toContain('declare scopeOf(observed)');
    expect(found.fix).toContain('declare targetOf(observed)');
  });
});

describe('readback audit on the demo helpdesk and the examples', () => {
  it('the helpdesk actions that read a record declare targetOf, so identity is not debt for them', async () => {
    const { createHelpdesk } = await import('../../src/testing/helpdesk.js');
    const hd = createHelpdesk();
    const reading = [hd.actions.updateTicket, hd.actions.sendEmail, hd.actions.refundOrder];
    for (const action of reading) expect(action.targetOf, action.name).toBeTypeOf('function');
    expect(hd.actions.migrateRecords.targetOf).toBeTypeOf('function');
    const tools = auditActions([hd.actions.updateTicket]);
    expect(tools[0]!.findings.find((f) => f.question === 'identity')?.verdict).toBe('answered');
  });

  it('the CLI prints the targetOf fix for an action without it', async () => {
    const { stdout } = await runCli(['audit', 'test/fixtures/audit/indebted.ts']);
    expect(stdout.replace(/\s+│?\s*/g, ' ')).toContain('declare targetOf(observed)');
  });
});
