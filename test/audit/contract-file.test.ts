import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { auditContract } from '../../src/audit/audit.js';
import { formatProblem, parseCompletionContract } from '../../src/audit/contract-file.js';

const EXAMPLE = readFileSync(new URL('../../examples/contracts/send-email.yaml', import.meta.url), 'utf8');

/** The problems of a contract text as the CLI prints them, or 'ok'. */
function problems(text: string): string[] | 'ok' {
  const result = parseCompletionContract(text);
  return result.ok ? 'ok' : result.problems.map((p) => formatProblem(p, 'c.yaml'));
}

function edit(from: string | RegExp, to: string): string {
  const out = EXAMPLE.replace(from, to);
  if (out === EXAMPLE) throw new Error(`the example no longer contains ${String(from)}`);
  return out;
}

describe('the example completion contract', () => {
  it('parses into every section, rules normalized', () => {
    const result = parseCompletionContract(EXAMPLE);
    if (!result.ok) throw new Error(result.problems.map((p) => formatProblem(p)).join('\n'));
    const c = result.contract;
    expect(Object.keys(c.statuses)).toEqual(['verified', 'pending', 'failed', 'partial', 'no_op', 'unknown']);
    expect(c.requiredFields).toEqual([
      'status',
      'target',
      'operation_id',
      'postcondition',
      'observed_at',
      'next_allowed_action',
      'safe_to_repeat',
    ]);
    expect(c.rules).toHaveLength(4);
    expect(c.rules[0]).toEqual({
      rule: "Only the runner assigns verified, and only from the provider's message record.",
    });
    expect(c.rules[1]).toEqual({
      rule: 'Queued, accepted or a 2xx reply never means delivered.',
      when: ['pending', 'unknown'],
      forbid: ['sent', 'delivered', 'done'],
      require: ['operation_id'],
    });
    expect(c.rules[2]?.when).toEqual(['unknown']);
    expect(Object.keys(c.postconditionTemplate)).toEqual(['target', 'expected', 'freshness', 'scope']);
    expect(auditContract(c, 'send-email.yaml')).toEqual({ source: 'send-email.yaml', debt: 0, findings: [] });
  });
});

describe('contract validation errors name the path and line', () => {
  it('a rule bound to a status that does not exist', () => {
    expect(problems(edit('when: failed', 'when: faild'))).toEqual([
      'c.yaml:37:13: completion_contract.rules[3].when: expected a status name (verified, pending, failed, partial, no_op, unknown); got "faild"',
    ]);
  });

  it('a bad entry inside a `when` list', () => {
    expect(problems(edit('when: [pending, unknown]', 'when: [pending, 7]'))).toEqual([
      'c.yaml:30:23: completion_contract.rules[1].when[1]: expected a status name (verified, pending, failed, partial, no_op, unknown); got number 7',
    ]);
  });

  it('forbid or require without `when`, pointing at the rule', () => {
    expect(problems(edit(/ {6}when: failed\n/, ''))).toEqual([
      'c.yaml:36:7: completion_contract.rules[3].when: is required when a rule has "forbid" or "require": name the statuses it binds',
    ]);
  });

  it('an unknown placeholder, a missing status and an unknown field, all at once', () => {
    const text = edit('{reason}', '{why}')
      .replace(/ {4}unknown: The send.*\n/, '')
      .replace('    - observed_at\n', '    - observed_time\n');
    expect(problems(text)).toEqual([
      'c.yaml:10:5: completion_contract.statuses: missing unknown: every status needs a one-line meaning',
      'c.yaml:21:7: completion_contract.required_fields[4]: expected a completion field (status, action, target, operation_id, idempotency_key, attempt, postcondition, mode, observed_at, evidence, checks, units, error_code, reason, next_allowed_action, safe_to_repeat, message); got "observed_time"',
      expect.stringMatching(
        /^c\.yaml:48:13: completion_contract\.message_templates\.failed: unknown placeholder \{why\}; expected one of \{action\}/,
      ),
    ]);
  });

  it('unknown keys and wrong types', () => {
    const text = edit('  statuses:\n', '  status:\n    verified: x\n  statuses:\n')
      .replace('  postcondition_template:\n', '  postcondition_template:\n    owner: ops\n')
      .replace(/ {2}rules:\n/, '  rules:\n    - 12\n');
    expect(problems(text)).toEqual([
      'c.yaml:9:3: completion_contract.status: unknown key; expected one of purpose, statuses, required_fields, rules, postcondition_template, message_templates',
      'c.yaml:29:7: completion_contract.rules[0]: expected a rule: a sentence, or a mapping with "rule" and optional "when"; got number 12',
      'c.yaml:44:5: completion_contract.postcondition_template.owner: unknown key; expected one of target, expected, freshness, scope',
    ]);
  });

  it('a file without the root key, or empty', () => {
    expect(problems('statuses: {}\n')).toEqual([
      'c.yaml:1:1: statuses: unknown key; the file holds one "completion_contract:" mapping',
      'c.yaml:1:1: (root): missing "completion_contract:", the mapping that holds the contract',
    ]);
    expect(problems('')).toEqual([
      'c.yaml: (root): expected a mapping with one key, "completion_contract"; got nothing',
    ]);
    expect(problems('completion_contract: 3\n')).toEqual([
      'c.yaml:1:22: completion_contract: expected a mapping; got number 3',
    ]);
  });

  it('malformed YAML reports the first parser error at its line and column', () => {
    expect(problems('completion_contract:\n\tpurpose: x\n')).toEqual([
      'c.yaml:2:1: (yaml): malformed YAML: Tabs are not allowed as indentation [TAB_AS_INDENT]',
    ]);
    expect(problems(edit('  purpose: >-', '  rules: []\n  purpose: >-'))).toEqual([
      'c.yaml:27:3: (yaml): malformed YAML: Map keys must be unique [DUPLICATE_KEY]',
    ]);
    const [unclosed] = problems(edit('  rules:\n', '  rules:\n   - [unclosed\n')) as string[];
    expect(unclosed).toMatch(
      /^c\.yaml:29:5: \(yaml\): malformed YAML: .*\[MISSING_CHAR\] \(and \d+ more errors after it\)$/,
    );
  });
});

describe('contract debts', () => {
  function audited(text: string) {
    const result = parseCompletionContract(text);
    if (!result.ok) throw new Error('expected a valid contract');
    return auditContract(result.contract, 'c.yaml').findings;
  }

  it('templates that claim completion, drop the operation id, or break a rule', () => {
    const text = edit(
      'pending: "The provider queued the message to {target}; delivery is not confirmed yet. Follow up with {operation_id}."',
      'pending: "Your email to {target} was sent."',
    )
      .replace(
        / {4}unknown: "Whether.*"\n/,
        '    unknown: "The message to {target} failed; ref {operation_id}."\n',
      )
      .replace(/ {4}- operation_id\n/, '');
    expect(audited(text)).toEqual([
      {
        path: 'completion_contract.message_templates.pending',
        problem: 'claims completion ("sent") for a pending outcome',
      },
      {
        path: 'completion_contract.message_templates.pending',
        problem: 'leaves out {operation_id}, so an unresolved operation cannot be followed up',
      },
      {
        path: 'completion_contract.message_templates.pending',
        problem: 'uses "sent", forbidden by "Queued, accepted or a 2xx reply never means delivered."',
      },
      {
        path: 'completion_contract.message_templates.pending',
        problem:
          'leaves out {operation_id}, required by "Queued, accepted or a 2xx reply never means delivered."',
      },
      {
        path: 'completion_contract.message_templates.unknown',
        problem: 'does not say the outcome is unknown or may not have happened',
      },
      {
        path: 'completion_contract.message_templates.unknown',
        problem:
          'uses "failed", forbidden by "A timeout is reported as unknown until the provider confirms a bounce."',
      },
      {
        path: 'completion_contract.required_fields',
        problem: 'does not require operation_id: a pending or unknown outcome cannot be followed up',
      },
    ]);
  });

  it('placeholders count as reported values, not claims', () => {
    const text = edit(
      'no_op: "The provider already holds',
      'no_op: "{postcondition}: the provider already holds',
    );
    expect(audited(text)).toEqual([]);
  });
});
