import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { auditActions } from '../../src/audit/audit.js';
import { defineAction } from '../../src/contract/define.js';
import { freshness } from '../../src/contract/freshness.js';
import { accepted } from '../../src/runner/markers.js';
import { schema } from '../../src/testing/schema.js';
import { runCli } from '../cli/support.js';

// The audit's judgement on seeded debts: each is reported once, and nothing else is.
const dir = mkdtempSync(join(tmpdir(), 'readback-audit-judgement-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Row = {
  id: string;
  to: string;
  version: number;
  events: { operationId: string }[];
  tenant: string;
  idempotencyKey: string;
};

const EXAMPLE = readFileSync('examples/contracts/send-email.yaml', 'utf8');
const UNKNOWN_LINE = /^( {4}unknown: )".*$/m;

async function auditContractText(name: string, text: string) {
  const path = join(dir, name);
  writeFileSync(path, text);
  const r = await runCli(['audit', '--contract', path, '--json']);
  expect(r.stderr).toBe('');
  const report = JSON.parse(r.stdout) as { contract: { findings: { path: string; problem: string }[] } };
  return { code: r.code, findings: report.contract.findings };
}

describe('unknown messages that say the outcome is uncertain in other words', () => {
  it('passes an unknown template worded "not sure whether" or "can\'t tell if" (exit 0)', async () => {
    for (const wording of [
      'We are not sure whether the message to {target} went out; keep {operation_id} and check first.',
      "We can't tell if the message to {target} went out; keep {operation_id} and check first.",
    ]) {
      const r = await auditContractText('unsure.yaml', EXAMPLE.replace(UNKNOWN_LINE, `$1"${wording}"`));
      expect({ wording, ...r }).toEqual({ wording, code: 0, findings: [] });
    }
  });

  it('still reports, once, an unknown template worded as a certain outcome (exit 3)', async () => {
    const r = await auditContractText(
      'certain.yaml',
      EXAMPLE.replace(UNKNOWN_LINE, '$1"The message to {target} did not go out; see {operation_id}."'),
    );
    expect(r.code).toBe(3);
    expect(r.findings).toEqual([
      {
        path: 'completion_contract.message_templates.unknown',
        problem: 'does not say the outcome is unknown or may not have happened',
      },
    ]);
  });

  it('does not call an uncertain unknown override "certain" on an otherwise clean action', () => {
    const action = (unknown: (c: { target: string; operationId: string }) => string) =>
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
        targetOf: (t: Row) => `ticket:${t.id}`,
        scopeOf: (t: Row) => ({ tenant: t.tenant }),
        safeToRepeat: false,
        messages: { unknown },
      });
    const debts = (a: ReturnType<typeof action>) =>
      auditActions([a])[0]!
        .findings.filter((f) => f.verdict === 'debt')
        .map((f) => f.question);
    expect(debts(action((c) => `Not sure if ${c.target} changed; operation ${c.operationId}.`))).toEqual([]);
    expect(debts(action((c) => `We couldn't verify ${c.target}; operation ${c.operationId}.`))).toEqual([]);
    expect(debts(action((c) => `Resolving ${c.target} failed (operation ${c.operationId}).`))).toEqual([
      'uncertain_on_timeout',
    ]);
  });
});

type Config = Record<string, unknown>;

// A committed action and an accepted one that answer every question; each case below seeds one debt.
const ticket = (): Config => ({
  name: 'resolve_ticket',
  description: 'Resolve a ticket.',
  system: 'helpdesk tickets API',
  input: schema({ id: 'string' }),
  target: ({ id }: { id: string }) => `ticket:${id}`,
  postcondition: 'The ticket reads back as resolved.',
  before: () => null,
  execute: () => ({ ok: true }),
  observe: () => null,
  expect: () => ({ status: 'resolved' }),
  fresh: freshness.all<unknown, Row>(
    freshness.versionAbove((t: Row) => t.version),
    freshness.auditEvent((t: Row) => t.events),
  ),
  targetOf: (t: Row) => `ticket:${t.id}`,
  scopeOf: (t: Row) => ({ tenant: t.tenant }),
  safeToRepeat: false,
});
const mail = (): Config => ({
  name: 'send_email',
  description: 'Send an email.',
  system: 'mail provider message API',
  input: schema({ to: 'email' }),
  target: ({ to }: { to: string }) => `email:${to}`,
  mode: 'accepted',
  postcondition: 'The provider reports the message delivered.',
  execute: (_input: unknown, ctx: { idempotencyKey: string }) => accepted(ctx.idempotencyKey),
  observe: () => null,
  terminal: () => 'succeeded',
  expect: ({ to }: { to: string }) => ({ to, status: 'delivered' }),
  fresh: freshness.idempotencyKeyIn((m: Row) => m.idempotencyKey),
  targetOf: (m: Row) => `email:${m.to}`,
  scopeOf: (m: Row) => ({ tenant: m.tenant }),
  safeToRepeat: true,
  poll: { maxDurationMs: 120_000, maxReads: 12 },
});
const without = (config: Config, key: string): Config =>
  Object.fromEntries(Object.entries(config).filter(([k]) => k !== key));
const debtsOf = (config: Config) =>
  auditActions([defineAction(config as never)])[0]!
    .findings.filter((f) => f.verdict === 'debt')
    .map((f) => f.question);

describe('one seeded debt, one finding', () => {
  it('finds no debt in either clean action', () => {
    expect([debtsOf(ticket()), debtsOf(mail())]).toEqual([[], []]);
  });

  it.each([
    ['no owning system', without(ticket(), 'system'), ['owner']],
    ['no scopeOf', without(ticket(), 'scopeOf'), ['identity']],
    ['no freshness rule', without(mail(), 'fresh'), ['freshness']],
    ['accepted with the default poll budget', without(mail(), 'poll'), ['polling_handle']],
    [
      'not safe to repeat, nothing tying the record to the operation',
      { ...ticket(), fresh: freshness.versionAbove((t: Row) => t.version) },
      ['retry'],
    ],
    [
      'a pending override without the operation id',
      { ...ticket(), messages: { pending: (c: { target: string }) => `${c.target} is not confirmed yet.` } },
      ['messages'],
    ],
    // Documented as two questions: the review asks who decides a retry, the ownership set who owns the budget.
    ['safeToRepeat left unknown', { ...ticket(), safeToRepeat: 'unknown' }, ['retry', 'one_retry_budget']],
  ])('%s', (_name, config, expected) => {
    expect(debtsOf(config as Config)).toEqual(expected);
  });
});
