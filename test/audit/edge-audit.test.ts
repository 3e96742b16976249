import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { auditActions } from '../../src/audit/audit.js';
import { formatProblem, parseCompletionContract } from '../../src/audit/contract-file.js';
import { defineAction } from '../../src/contract/define.js';
import type { AnyAction, Check } from '../../src/contract/types.js';
import { createRunner } from '../../src/runner/runner.js';
import { schema } from '../../src/testing/schema.js';
import { runCli } from '../cli/support.js';

const dir = mkdtempSync(join(tmpdir(), 'readback-audit-edge-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function problems(text: string): string[] | 'ok' {
  const result = parseCompletionContract(text);
  return result.ok ? 'ok' : result.problems.map((p) => formatProblem(p, 'c.yaml'));
}

const VALID = `completion_contract:
  statuses: {verified: a, pending: b, failed: c, partial: d, no_op: e, unknown: f}
  required_fields: [status, operation_id, target]
  rules:
    - rule: Queued never means sent.
      when: WHEN
      forbid: [sent]
  postcondition_template: {target: a, expected: b, freshness: c, scope: d}
  message_templates:
    verified: Done for {target}.
    pending: Queued as {operation_id}.
    failed: Failed ({reason}).
    partial: "{passed} of {required} passed."
    no_op: Nothing to do for {target}.
    unknown: Outcome unknown; {operation_id} may not have happened.
`;

// Nine aliases of nine aliases, nine levels deep: a few hundred bytes that expand to 387 million strings.
const BOMB = [
  'a: &a ["x","x","x","x","x","x","x","x","x"]',
  ...'bcdefghi'.split('').map((n, i) => `${n}: &${n} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`),
  'completion_contract: *i',
  '',
].join('\n');

describe('YAML completion contracts that attack or mislead the parser', () => {
  it('reports an alias bomb as an invalid file instead of crashing', async () => {
    expect(problems(BOMB)).toEqual([expect.stringMatching(/^c\.yaml: \(yaml\): cannot be read: .*alias/i)]);
    const path = join(dir, 'bomb.yaml');
    writeFileSync(path, BOMB);
    const r = await runCli(['audit', '--contract', path, '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).error.message).toMatch(/is invalid/);
    expect(r.stderr).not.toContain('unexpected error');
    expect(r.stderr).toContain('is invalid');
  });

  it('still reads ordinary anchors and aliases', () => {
    const text = VALID.replace('when: WHEN', 'when: &open [pending, unknown]').replace(
      '      forbid: [sent]',
      '      forbid: [sent]\n    - rule: Nor delivered.\n      when: *open\n      forbid: [delivered]',
    );
    expect(problems(text)).toBe('ok');
  });

  it('refuses a rule whose "when" is an empty list, which would bind no status and check nothing', () => {
    expect(problems(VALID.replace('WHEN', '[pending]'))).toBe('ok');
    expect(problems(VALID.replace('WHEN', '[]'))).toEqual([
      expect.stringMatching(
        /^c\.yaml:6:\d+: completion_contract\.rules\[0\]\.when: expected at least one status/,
      ),
    ]);
  });
});

function probeAction(fresh: (observed: unknown) => unknown): AnyAction {
  return defineAction({
    name: 'touch_record',
    description: 'Touch a record.',
    system: 'records API',
    input: schema({ id: 'string' }),
    target: ({ id }) => `record:${id}`,
    postcondition: 'The record is touched.',
    execute: () => ({ ok: true }),
    observe: () => ({ touched: true }),
    expect: () => ({ touched: true }),
    // Plain JavaScript modules are not type-checked: the audit sees what users really export.
    fresh: fresh as () => boolean,
    scopeOf: () => ({}),
    safeToRepeat: true,
  }) as unknown as AnyAction;
}

describe('audit of hand-written freshness rules', () => {
  it('does not crash on a rule that returns a check without a name', () => {
    const [tool] = auditActions([probeAction(() => ({ pass: true }))]);
    expect(tool!.findings.find((f) => f.question === 'freshness')).toMatchObject({ verdict: 'answered' });
  });

  it('reports an async rule as debt, since the runner can then never verify a run', async () => {
    const action = probeAction(async () => true);
    const runner = createRunner();
    const completion = await runner.run(action, { id: 'r-1' }, { runId: 'audit-probe', scope: {} });
    // What the runtime really does with it: the record matches, and the run still ends unknown.
    expect(completion.status).toBe('unknown');
    const [tool] = auditActions([action]);
    expect(tool!.findings.find((f) => f.question === 'freshness')).toMatchObject({
      verdict: 'debt',
      answer: expect.stringContaining('Promise'),
    });
  });

  it('survives an async rule that rejects on the probe record (no unhandled rejection)', async () => {
    const action = probeAction(async (observed) => (observed as { v: { n: number } }).v.n > 0);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const [tool] = auditActions([action]);
      expect(tool!.findings.find((f) => f.question === 'freshness')?.verdict).toBe('debt');
      await new Promise((resolve) => setTimeout(resolve, 20));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(unhandled).toEqual([]);
  });

  it('still names the checks of a synchronous rule that returns named checks', () => {
    const check: Check = { name: 'fresh:custom_stamp', pass: true };
    const [tool] = auditActions([probeAction(() => check)]);
    expect(tool!.findings.find((f) => f.question === 'freshness')).toMatchObject({
      verdict: 'answered',
      answer: 'fresh rule: custom_stamp',
    });
  });
});
