import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { AuditReport } from '../../src/audit/audit.js';
import { QUESTIONS } from '../../src/audit/questions.js';
import { runCli, stripAnsi, widest } from '../cli/support.js';

const INDEBTED = 'test/fixtures/audit/indebted.ts';
const CLEAN = 'test/fixtures/audit/clean.ts';
const EXAMPLE = 'examples/contracts/send-email.yaml';
const dir = mkdtempSync(join(tmpdir(), 'readback-audit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function contractFile(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

/** The heading line of each tool table, and the verdict column of its rows, from the text report. */
function verdicts(stdout: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  let current: string | undefined;
  for (const line of stdout.split('\n')) {
    const heading = /^(\w+) \(/.exec(line);
    if (heading) {
      current = heading[1]!;
      out[current] = [];
    }
    const row = /^│ (\S+)\s+│ (ok|DEBT|n\/a)\s+│/.exec(line);
    if (row && current) out[current]!.push(`${row[1]} ${row[2]}`);
  }
  return out;
}

describe('readback audit <module>', () => {
  it('prints a debt table per tool and exits 3 when there is debt', async () => {
    const { code, stdout, stderr } = await runCli(['audit', INDEBTED]);
    expect(stderr).toBe('');
    expect(code).toBe(3);
    const tables = verdicts(stdout);
    expect(Object.keys(tables)).toEqual(['update_ticket', 'send_email', 'page_oncall', 'bump_plan']);
    expect(tables.update_ticket).toEqual([
      'owner DEBT',
      'identity DEBT',
      'freshness DEBT',
      'queue ok',
      'retry DEBT',
      'messages ok',
      'queued_vs_applied ok',
      'polling_handle n/a',
      'enforced_verification ok',
      'uncertain_on_timeout ok',
      'one_retry_budget DEBT',
    ]);
    expect(tables.bump_plan!.filter((r) => r.endsWith('DEBT'))).toEqual(['freshness DEBT']);
    expect(stdout).toContain('update_ticket (committed, system not named, safeToRepeat: unknown): 5 debts\n');
    expect(stdout).toContain(
      'page_oncall (optimistic, system: pager service, safeToRepeat: false): 7 debts\n',
    );
    expect(stdout).toContain('fix: declare scopeOf(observed) so a record from another scope');
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('audit: 16 debts (4 of 4 tools indebted)');
    expect(widest(stdout)).toBeLessThanOrEqual(120);
  });

  it('exits 0 for the clean module, every question answered', async () => {
    const { code, stdout } = await runCli(['audit', CLEAN]);
    expect(code).toBe(0);
    const tables = verdicts(stdout);
    expect(Object.keys(tables)).toEqual(['resolve_ticket', 'send_email']);
    expect(tables.send_email).toHaveLength(QUESTIONS.length);
    expect(tables.send_email!.every((r) => r.endsWith(' ok'))).toBe(true);
    expect(stdout.trimEnd().split('\n').at(-1)).toBe('audit: clean: 2 tools, every question answered');
  });

  it('--json prints the report: per-tool findings for every question, and the total', async () => {
    const { code, stdout } = await runCli(['audit', INDEBTED, '--json']);
    expect(code).toBe(3);
    const report = JSON.parse(stdout) as AuditReport;
    expect(Object.keys(report)).toEqual(['module', 'contract', 'tools', 'debt', 'clean']);
    expect(report).toMatchObject({ module: INDEBTED, contract: null, debt: 16, clean: false });
    expect(report.tools.map((t) => [t.action, t.mode, t.system, t.safeToRepeat, t.debt])).toEqual([
      ['update_ticket', 'committed', null, 'unknown', 5],
      ['send_email', 'accepted', 'mail provider message API', true, 3],
      ['page_oncall', 'optimistic', 'pager service', false, 7],
      ['bump_plan', 'committed', 'billing accounts API', false, 1],
    ]);
    for (const tool of report.tools) {
      expect(tool.findings.map((f) => f.question)).toEqual(QUESTIONS.map((q) => q.id));
      for (const f of tool.findings) {
        expect(Object.keys(f).sort()).toEqual(
          f.verdict === 'debt' ? ['answer', 'fix', 'question', 'verdict'] : ['answer', 'question', 'verdict'],
        );
      }
    }
  });

  it('colors verdicts on a terminal unless --no-color or NO_COLOR', async () => {
    const colored = await runCli(['audit', CLEAN], { tty: 100 });
    expect(colored.stdout).toContain('\u001b[32mok');
    expect(widest(colored.stdout)).toBeLessThanOrEqual(100);
    const plain = await runCli(['audit', CLEAN, '--no-color'], { tty: 100 });
    expect(plain.stdout).toBe(stripAnsi(colored.stdout));
    const env = await runCli(['audit', CLEAN], { tty: 100, env: { NO_COLOR: '1' } });
    expect(env.stdout).toBe(plain.stdout);
  });
});

describe('readback audit --contract', () => {
  it('validates and audits the example contract alone, exit 0', async () => {
    const { code, stdout } = await runCli(['audit', '--contract', EXAMPLE]);
    expect(code).toBe(0);
    expect(stdout).toBe(`contract ${EXAMPLE}: no debt\n\naudit: clean: 0 tools, every question answered\n`);
  });

  it("applies the contract's rules to each tool's message overrides", async () => {
    // resolve_ticket's pending override says "not confirmed yet": a rule that forbids the word catches it.
    const strict = readFileSync(EXAMPLE, 'utf8').replace(
      'forbid: [sent, delivered, done]',
      'forbid: [confirmed]',
    );
    const path = contractFile('strict.yaml', strict);
    const { code, stdout } = await runCli(['audit', CLEAN, '--contract', path, '--json']);
    expect(code).toBe(3);
    const report = JSON.parse(stdout) as AuditReport;
    // The example's own pending template says "not confirmed yet", so the file breaks the stricter rule too.
    expect(report.contract).toEqual({
      source: path,
      debt: 1,
      findings: [
        {
          path: 'completion_contract.message_templates.pending',
          problem: 'uses "confirmed", forbidden by "Queued, accepted or a 2xx reply never means delivered."',
        },
      ],
    });
    const messages = report.tools[0]!.findings.find((f) => f.question === 'messages');
    expect(messages).toMatchObject({
      verdict: 'debt',
      answer:
        'the pending message override uses "confirmed", forbidden by "Queued, accepted or a 2xx reply never means delivered."',
    });
    expect(report.tools[1]!.debt).toBe(0);
  });

  it('reports contract debt in the text report', async () => {
    const loose = readFileSync(EXAMPLE, 'utf8').replace(
      /pending: ".*"/,
      'pending: "Done: your message to {target} is on its way. Ref {operation_id}."',
    );
    const path = contractFile('loose.yaml', loose);
    const { code, stdout } = await runCli(['audit', CLEAN, '--contract', path]);
    expect(code).toBe(3);
    expect(stdout.split('\n').slice(0, 3)).toEqual([
      `contract ${path}: 2 debts`,
      '  DEBT completion_contract.message_templates.pending: claims completion ("done") for a pending outcome',
      '  DEBT completion_contract.message_templates.pending: uses "done", forbidden by "Queued, accepted or a 2xx reply never means delivered."',
    ]);
    expect(stdout.trimEnd().split('\n').at(-1)).toBe(
      'audit: 2 debts (0 of 2 tools indebted, contract indebted)',
    );
  });

  it('an invalid contract stops the audit with every problem, exit 1', async () => {
    const bad = readFileSync(EXAMPLE, 'utf8')
      .replace('when: failed', 'when: faild')
      .replace('{reason}', '{why}');
    const path = contractFile('bad.yaml', bad);
    const { code, stdout, stderr } = await runCli(['audit', CLEAN, '--contract', path]);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    const lines = stderr.trimEnd().split('\n');
    expect(lines[0]).toBe(`readback: contract file ${path} is invalid (2 problems):`);
    expect(lines[1]).toBe(
      `  ${path}:37:13: completion_contract.rules[3].when: expected a status name (verified, pending, failed, partial, no_op, unknown); got "faild"`,
    );
    expect(lines[2]).toMatch(
      new RegExp(
        `^  ${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:49:\\d+: completion_contract\\.message_templates\\.failed: unknown placeholder \\{why\\}`,
      ),
    );
  });

  it('malformed YAML reports its line and column, exit 1', async () => {
    const path = contractFile('tabs.yaml', 'completion_contract:\n  purpose: x\n\tstatuses: {}\n');
    const { code, stderr } = await runCli(['audit', '--contract', path]);
    expect(code).toBe(1);
    expect(stderr).toBe(
      `readback: contract file ${path} is invalid (1 problem):\n  ${path}:3:1: (yaml): malformed YAML: Tabs are not allowed as indentation [TAB_AS_INDENT]\n`,
    );
  });
});

describe('readback audit usage', () => {
  it.each([
    [['audit'], "'readback audit' needs an actions module, a --contract file, or both"],
    [['audit', CLEAN, 'extra'], "unexpected argument 'extra' for 'readback audit'"],
    [['audit', 'nope.js'], 'actions module not found: nope.js'],
    [['audit', '--contract', 'nope.yaml'], 'contract file not found: nope.yaml'],
    [['audit', CLEAN, '--contract'], "option '--contract' needs a value"],
  ])('%j is a usage mistake, exit 2', async (argv, message) => {
    const { code, stderr } = await runCli(argv);
    expect(code).toBe(2);
    expect(stderr.split('\n')[0]).toBe(`readback: ${message}`);
  });

  it('a module with no actions is a usage mistake too', async () => {
    const path = join(dir, 'empty.mjs');
    writeFileSync(path, 'export const nothing = 1;\n');
    const { code, stderr } = await runCli(['audit', path]);
    expect(code).toBe(2);
    expect(stderr).toContain('exports no actions');
  });

  it('help documents the exit status, and the command is listed', async () => {
    const help = await runCli(['audit', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain(
      'exit status: 0 no debt, 3 debt found, 1 module or contract error, 2 usage mistake',
    );
    expect(help.stdout).toContain('--contract <contract>');
    const general = await runCli(['--help']);
    expect(general.stdout).toMatch(/\n {2}audit +report the completion-ownership debt/);
  });
});
