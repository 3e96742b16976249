import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli/support.js';

const dir = mkdtempSync(join(tmpdir(), 'readback-review-target-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A verifier that read another ticket: readback said unknown / wrong_target, the agent said "resolved".
function trace(status: string, errorCode: string): string {
  const path = join(dir, `${status}-${errorCode}.jsonl`);
  const lines = [
    { kind: 'request', text: 'Set ticket T-7 to resolved.' },
    { kind: 'tool_call', id: 'c1', name: 'update_ticket', args: { id: 'T-7' }, target: 'ticket:T-7' },
    { kind: 'tool_result', call: 'c1', result: { ok: true }, claimed: 'success' },
    {
      kind: 'verification',
      call: 'c1',
      status,
      operationId: 'op-7',
      errorCode,
      checks: [{ name: 'target', pass: false, expected: 'ticket:T-7', observed: 'ticket:T-8' }],
    },
    { kind: 'final_answer', text: 'T-7 is resolved.' },
  ];
  writeFileSync(path, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  return path;
}

describe('review: a verifier that read another record', () => {
  it('is a readback mismatch to repair in the verifier, not a read to restore, when readback said unknown', async () => {
    for (const code of ['wrong_target', 'wrong_scope']) {
      const r = await runCli(['review', trace('unknown', code), '--json']);
      expect(r.code).toBe(3);
      const review = JSON.parse(r.stdout);
      expect(review.first.class, code).toBe('readback_mismatch');
      expect(review.first.repair).toMatch(/verifier's target and scope/);
    }
  });

  it('is a readback mismatch when readback said failed (a baseline of another record)', async () => {
    const r = await runCli(['review', trace('failed', 'wrong_target'), '--json']);
    expect(JSON.parse(r.stdout).first.class).toBe('readback_mismatch');
  });
});
