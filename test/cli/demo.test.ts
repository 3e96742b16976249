import { describe, expect, it } from 'vitest';
import { NAIVE_ANSWER, runDemo } from '../../src/cli/demo.js';
import { claimsCompletion } from '../../src/index.js';

describe('readback demo scenario', () => {
  it('gives each scripted call the status the scenario intends', async () => {
    const { rows } = await runDemo();
    expect(rows.map((r) => `${r.tool} ${r.args}`)).toEqual([
      'update_ticket T-104 → resolved',
      'update_ticket T-105 → resolved',
      'send_email ana@example.com',
      'send_email bo@example.com',
      'refund_order order 42, $19.99',
      'update_ticket T-106 → resolved',
      'migrate_records 100 records → v2',
      'send_email cy@example.com (wait: false)',
      'page_oncall "T-106 write failing"',
    ]);
    expect(rows.map((r) => r.completion.status)).toEqual([
      'verified',
      'no_op',
      'verified',
      'failed',
      'verified',
      'failed',
      'partial',
      'pending',
      'unknown',
    ]);
    expect(rows.map((r) => r.completion.errorCode)).toEqual([
      undefined,
      undefined,
      undefined,
      'provider_failed',
      undefined,
      'readback_mismatch',
      'readback_mismatch',
      'in_progress',
      'unverifiable',
    ]);
  });

  it('shows what each tool itself returned, taken from the operation event log', async () => {
    const { rows } = await runDemo();
    expect(rows.map((r) => r.toolReturned)).toEqual([
      '{ok:true, version:2}',
      'not called (already in that state)',
      'queued msg-0001',
      'queued msg-0002',
      'threw ETIMEDOUT',
      '{ok:true, version:2}',
      '{ok:true, accepted:100}',
      'queued msg-0003',
      '{ok:true}',
    ]);
    expect(rows.map((r) => r.called)).toEqual([true, false, true, true, true, true, true, true, true]);
    expect(rows[4]!.naive).toMatch(/Refund failed/);
    expect(rows.filter((r) => r.naiveClaimsSuccess)).toHaveLength(8);
  });

  it('leaves the fakes in the state the statuses describe', async () => {
    const { helpdesk: hd, rows } = await runDemo();
    // Only T-104 was really written: T-105 needed nothing and T-106's write soft-failed.
    expect(hd.tickets.writes.map((w) => w.ticketId)).toEqual(['T-104']);
    expect((await hd.tickets.get('T-106'))?.status).toBe('open');
    expect(hd.tickets.calls.filter((c) => c.method === 'update').map((c) => c.args[0])).toEqual([
      'T-104',
      'T-106',
    ]);
    expect(hd.mail.inbox('ana@example.com')).toHaveLength(1);
    expect(hd.mail.inbox('bo@example.com')).toEqual([]);
    expect(hd.mail.messages.find((m) => m.to === 'cy@example.com')?.status).toBe('queued');
    // The refund landed once and the runner read it back instead of retrying.
    expect(hd.ledger.calls.filter((c) => c.method === 'refund')).toHaveLength(1);
    expect(hd.ledger.refunded('42')).toBe(1999);
    expect(hd.batch.migrations).toHaveLength(98);
    expect(rows[6]!.completion.units).toEqual({
      required: 100,
      passed: 98,
      failed: 2,
      failedTargets: ['record:rec-017', 'record:rec-063'],
    });
    expect(hd.pager.pages).toHaveLength(1);
  });

  it('hands out messages that claim completion only when verified, and ids to poll', async () => {
    const { completions } = await runDemo();
    for (const c of completions) expect(claimsCompletion(c.message)).toBe(c.status === 'verified');
    const pending = completions[7]!;
    expect(pending.nextAllowedAction).toBe('poll');
    expect(pending.message).toContain(pending.operationId);
  });

  it('rejects the naive final answer and accepts the honest summary', async () => {
    const result = await runDemo();
    expect(result.naiveAnswer).toBe(NAIVE_ANSWER);
    const { naive, honest } = result.guard;
    expect(naive.ok).toBe(false);
    const flagged = naive.violations.map((v) => `${v.target ?? v.kind}:${v.status ?? ''}`);
    expect(flagged).toEqual(
      expect.arrayContaining([
        'ticket:T-105:no_op',
        'ticket:T-106:failed',
        'email:bo@example.com:failed',
        'email:cy@example.com:pending',
        'batch:100-records-v2:partial',
      ]),
    );
    // The refund really happened, so claiming it is not a violation.
    expect(flagged).not.toContain('order:42:verified');
    expect(honest).toEqual({ ok: true, violations: [] });
    expect(result.summary).toMatch(/^3 of 9 actions verified;/);
  });

  it('counts the gap between what the naive agent claimed and what was verified', async () => {
    const { gap } = await runDemo();
    expect(gap).toEqual({ calls: 9, naiveClaimedSuccess: 8, verified: 3, naiveCalledFailed: 1 });
  });

  it('is deterministic and instant', async () => {
    const started = performance.now();
    const a = await runDemo();
    expect(performance.now() - started).toBeLessThan(2_000);
    const b = await runDemo();
    expect(JSON.stringify(b.completions)).toBe(JSON.stringify(a.completions));
    expect(b.summary).toBe(a.summary);
  });
});
