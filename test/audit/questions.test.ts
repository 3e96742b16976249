import { beforeEach, describe, expect, it } from 'vitest';
import { auditActions } from '../../src/audit/audit.js';
import { freshnessChecks, QUESTIONS } from '../../src/audit/questions.js';
import { collectActions } from '../../src/cli/reconcile.js';
import { defineAction } from '../../src/contract/define.js';
import { createRunner } from '../../src/runner/runner.js';
import { schema } from '../../src/testing/schema.js';
import * as clean from '../fixtures/audit/clean.js';
import * as indebted from '../fixtures/audit/indebted.js';

const debtsOf = (mod: Record<string, unknown>) =>
  Object.fromEntries(
    auditActions(collectActions(mod)).map((t) => [
      t.action,
      t.findings.filter((f) => f.verdict === 'debt').map((f) => f.question),
    ]),
  );

describe('audit questions on the fixtures', () => {
  it('finds exactly the debts each indebted action was written with', () => {
    expect(debtsOf(indebted)).toEqual({
      update_ticket: ['owner', 'identity', 'freshness', 'retry', 'one_retry_budget'],
      send_email: ['messages', 'polling_handle', 'uncertain_on_timeout'],
      page_oncall: [
        'identity',
        'freshness',
        'queue',
        'retry',
        'queued_vs_applied',
        'polling_handle',
        'enforced_verification',
      ],
      bump_plan: ['freshness'],
    });
  });

  it('finds no debt in the clean actions, and asks every question of each', () => {
    const tools = auditActions(collectActions(clean));
    expect(tools.map((t) => [t.action, t.debt])).toEqual([
      ['resolve_ticket', 0],
      ['send_email', 0],
    ]);
    for (const tool of tools)
      expect(tool.findings.map((f) => f.question)).toEqual(QUESTIONS.map((q) => q.id));
    const resolve = tools[0]!.findings;
    expect(resolve.find((f) => f.question === 'polling_handle')?.verdict).toBe('not_applicable');
    expect(resolve.find((f) => f.question === 'freshness')?.answer).toBe(
      'fresh rule: version_above_baseline, audit_event',
    );
    expect(resolve.find((f) => f.question === 'retry')?.answer).toContain('found by freshness audit_event');
  });

  it('explains each debt and how to pay it', () => {
    const tools = auditActions(collectActions(indebted));
    const tool = (name: string) => {
      const found = tools.find((t) => t.action === name);
      if (found === undefined) throw new Error(`no audit for ${name}`);
      return found;
    };
    const sendEmail = tool('send_email');
    const bumpPlan = tool('bump_plan');
    const messages = sendEmail.findings.find((f) => f.question === 'messages')!;
    expect(messages.answer).toBe(
      'the pending message override claims completion ("done") but the status is pending; the runtime would fall back to the default',
    );
    const timeout = sendEmail.findings.find((f) => f.question === 'uncertain_on_timeout')!;
    expect(timeout.answer).toBe(
      'the unknown message override reads as certain: "Sending to probe:target-1 failed (operation op_audit_probe)."',
    );
    const fresh = bumpPlan.findings.find((f) => f.question === 'freshness')!;
    expect(fresh).toMatchObject({
      verdict: 'debt',
      fix: 'declare before(input) reading the target before execute',
    });
  });

  it('reads which freshness helpers a rule is built from, and gives up on a rule that throws', () => {
    expect(freshnessChecks(clean.sendEmail)).toEqual(['fresh:idempotency_key']);
    const throwing = defineAction({
      name: 'odd',
      description: 'A rule that needs a real record.',
      system: 'db',
      input: schema({ id: 'string' }),
      target: ({ id }) => `row:${id}`,
      postcondition: 'The row exists.',
      execute: () => undefined,
      observe: () => ({ meta: { at: 1 } }),
      expect: () => ({}),
      fresh: (o: { meta: { at: number } }) => o.meta.at > 0,
      safeToRepeat: true,
    });
    expect(freshnessChecks(throwing)).toEqual([]);
    const [tool] = auditActions([throwing]);
    expect(tool!.findings.find((f) => f.question === 'freshness')).toMatchObject({
      verdict: 'answered',
      answer: 'fresh rule (custom)',
    });
  });

  it('a contract rule binds the message overrides of each tool', () => {
    const polite = defineAction({
      ...clean.resolveTicket,
      name: 'resolve_politely',
      messages: { pending: (c) => `Hang on: ${c.target} is being processed (ref ${c.operationId}).` },
    });
    const rules = [{ rule: 'No progress talk.', when: ['pending' as const], forbid: ['being processed'] }];
    const [withRule] = auditActions([polite], {
      statuses: {} as never,
      requiredFields: [],
      rules,
      postconditionTemplate: { target: '', expected: '', freshness: '', scope: '' },
      messageTemplates: {} as never,
    });
    expect(withRule!.findings.find((f) => f.question === 'messages')).toMatchObject({
      verdict: 'debt',
      answer: 'the pending message override uses "being processed", forbidden by "No progress talk."',
    });
    expect(auditActions([polite])[0]!.debt).toBe(0);
  });
});

// The audit flags designs, not runs; these runs show the flagged gaps change what a model is told.
describe('the debts the audit reports are real at run time', () => {
  beforeEach(() => {
    indebted.systems.tickets.clear();
    indebted.systems.failWrites = false;
    clean.systems.tickets.clear();
  });

  it('without freshness or a baseline, a write that never landed reads back as verified', async () => {
    const ticket = { id: 'T-1', tenant: 'acme', status: 'resolved', version: 3 };
    indebted.systems.tickets.set('T-1', ticket);
    indebted.systems.failWrites = true;
    const runner = createRunner();
    const loose = await runner.run(indebted.updateTicket, { id: 'T-1', status: 'resolved' }, { runId: 'r1' });
    expect(loose.status).toBe('verified');
    expect(indebted.systems.tickets.get('T-1')?.version).toBe(3); // nothing was written

    clean.systems.tickets.set('T-1', { ...ticket, events: [] });
    const honest = await runner.run(
      clean.resolveTicket,
      { id: 'T-1' },
      { runId: 'r1', scope: { tenant: 'acme' } },
    );
    expect(honest.status).toBe('no_op');
    expect(clean.systems.tickets.get('T-1')?.version).toBe(3);
  });

  it('the pending override the audit flags is refused by the runtime, so the model never sees it', async () => {
    const runner = createRunner();
    const c = await runner.run(indebted.sendEmail, { to: 'ana@example.com' }, { runId: 'r2', wait: false });
    expect(c.status).toBe('pending');
    expect(c.message).not.toContain('Done');
    expect(c.message).toContain(c.operationId);
  });
});
