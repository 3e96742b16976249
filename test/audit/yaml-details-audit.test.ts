import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { auditContract } from '../../src/audit/audit.js';
import { formatProblem, parseCompletionContract } from '../../src/audit/contract-file.js';

const EXAMPLE = readFileSync('examples/contracts/send-email.yaml', 'utf8');

function problems(text: string): string[] | 'ok' {
  const result = parseCompletionContract(text);
  return result.ok ? 'ok' : result.problems.map((p) => formatProblem(p, 'c.yaml'));
}

function lineOf(text: string, needle: string): number {
  return text.split('\n').findIndex((line) => line.includes(needle)) + 1;
}

describe('YAML completion contracts: details a careful author gets wrong', () => {
  it('an unresolved tag is an error at its line, not a value read as plain text', () => {
    const text = EXAMPLE.replace(
      '    pending: The provider queued',
      '    pending: !pending The provider queued',
    );
    expect(problems(text)).toEqual([
      `c.yaml:${lineOf(text, '!pending')}:14: (yaml): malformed YAML: Unresolved tag: !pending [TAG_RESOLVE_FAILED]`,
    ]);
  });

  it('a key that YAML reads as a number, boolean or null is reported at its own line', () => {
    for (const key of ['1', 'true', '~']) {
      const text = EXAMPLE.replace('  rules:\n', `  ${key}: x\n  rules:\n`);
      const [problem] = problems(text) as string[];
      expect(problem).toMatch(
        new RegExp(`^c\\.yaml:${lineOf(text, `  ${key}: x`)}:3: completion_contract\\.`),
      );
    }
    const text = EXAMPLE.replace('    unknown: The send', '    0: x\n    unknown: The send');
    expect(problems(text)).toEqual([
      expect.stringMatching(
        new RegExp(`^c\\.yaml:${lineOf(text, '    0: x')}:5: completion_contract.statuses.0: not`),
      ),
    ]);
  });

  it('a rule written as a folded block is one sentence in the findings that quote it', () => {
    const text = EXAMPLE.replace(
      '    - rule: A timeout is reported as unknown until the provider confirms a bounce.\n',
      '    - rule: >\n        A timeout is reported as unknown\n        until the provider confirms a bounce.\n',
    ).replace('is unknown; keep', 'is unknown or failed; keep');
    const result = parseCompletionContract(text);
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    expect(auditContract(result.contract, 'c.yaml').findings).toEqual([
      {
        path: 'completion_contract.message_templates.unknown',
        problem:
          'uses "failed", forbidden by "A timeout is reported as unknown until the provider confirms a bounce."',
      },
    ]);
  });
});
