import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunner } from '../../src/runner/runner.js';
import { createHelpdesk } from '../../src/testing/helpdesk.js';
import { jsonlSink } from '../../src/trace/index.js';
import { runCli } from '../cli/support.js';

// Tricky incidents for the review's judgement: where it must point, with which class and recovery,
// and which honest answers it must leave alone.
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'readback-review-judgement-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const request = (text: string) => ({ kind: 'request', text });
const call = (id: string, name: string, args: object, extra: object = {}) => ({
  kind: 'tool_call',
  id,
  name,
  args,
  ...extra,
});
const result = (id: string, body: object) => ({ kind: 'tool_result', call: id, ...body });
const verified = (id: string, status: string, extra: object = {}) => ({
  kind: 'verification',
  call: id,
  status,
  operationId: `op-${id}`,
  ...extra,
});
const answer = (text: string) => ({ kind: 'final_answer', text });

interface Judged {
  code: number;
  first?: {
    class: string;
    where: string;
    at: { line?: number };
    callId?: string;
    word?: string;
    claimLevel: string;
    detail: string;
    recovery: { path: string; safeToRetry: boolean | 'unknown' };
  };
  findings: unknown[];
}

let n = 0;
async function judge(...records: object[]): Promise<Judged> {
  const file = join(dir, `case-${++n}.jsonl`);
  writeFileSync(file, `${records.map((r) => JSON.stringify(r)).join('\n')}\n`);
  const r = await runCli(['review', file, '--json']);
  expect(r.stderr).toBe('');
  const json = JSON.parse(r.stdout) as Omit<Judged, 'code'>;
  return { code: r.code, ...json };
}

const REFUND = call('c1', 'refund_order', { orderId: '42' }, { safeToRepeat: false });

describe('failure claims in the final answer', () => {
  it('reports "failed" after a timeout whose effect the read-back verified, and says not to retry', async () => {
    const r = await judge(
      request('Refund order 42.'),
      REFUND,
      result('c1', { error: 'timeout after 30s' }),
      verified('c1', 'verified'),
      answer('Sorry, the refund for order 42 failed. Please try again.'),
    );
    expect(r.code).toBe(3);
    expect(r.first).toMatchObject({
      class: 'transport_error',
      where: 'final_answer',
      at: { line: 5 },
      callId: 'c1',
      word: 'failed',
      claimLevel: 'failed',
      recovery: { path: 'none', safeToRetry: false },
    });
    expect(r.first?.detail).toMatch(/effect holds.*do it twice/);
  });

  it('reports a negated effect ("wasn\'t refunded") after a timeout with no read-back: outcome unknown', async () => {
    const r = await judge(
      REFUND,
      result('c1', { error: 'ETIMEDOUT' }),
      answer("Order 42 wasn't refunded because the payment service timed out."),
    );
    expect(r.code).toBe(3);
    expect(r.first).toMatchObject({
      class: 'transport_error',
      word: "wasn't refunded",
      recovery: { path: 'human_reconcile', safeToRetry: false },
    });
  });

  it('reports "failed" for work that was accepted and is still pending, with poll as the recovery', async () => {
    const r = await judge(
      request('Email the report to ana@example.com.'),
      call('c1', 'send_email', { to: 'ana@example.com' }),
      result('c1', { result: { status: 202 } }),
      verified('c1', 'pending'),
      answer('The email to Ana failed to send.'),
    );
    expect(r.first).toMatchObject({ class: 'accepted_unfinished', where: 'final_answer', word: 'failed' });
    expect(r.first?.recovery.path).toBe('poll');
  });

  it('points at the second of two failure sentences when only the second contradicts its read-back', async () => {
    const r = await judge(
      call('c1', 'close_ticket', { id: 'T-1' }, { target: 'ticket:T-1' }),
      result('c1', { result: { ok: true } }),
      verified('c1', 'failed', { errorCode: 'readback_mismatch' }),
      call('c2', 'close_ticket', { id: 'T-2' }, { target: 'ticket:T-2', safeToRepeat: false }),
      result('c2', { error: 'timeout' }),
      verified('c2', 'verified'),
      answer('Closing T-1 failed. Closing T-2 failed too, please retry.'),
    );
    expect(r.first).toMatchObject({ callId: 'c2', class: 'transport_error', word: 'failed' });
    expect(r.findings).toHaveLength(1);
  });

  it('leaves honest failures, no-ops, hedges and negated confirmations alone', async () => {
    const honest: [object[], string][] = [
      [
        [
          call('c1', 'close_ticket', { id: 'T-1' }, { target: 'ticket:T-1' }),
          result('c1', { result: { ok: true } }),
          verified('c1', 'failed', { errorCode: 'readback_mismatch' }),
        ],
        'Closing T-1 failed: the ticket still reads open. It was not closed.',
      ],
      [
        [
          call('c1', 'close_ticket', { id: 'T-1' }, { target: 'ticket:T-1' }),
          result('c1', { result: { ok: true } }),
          verified('c1', 'no_op'),
        ],
        "T-1 wasn't changed: it was already closed.",
      ],
      [
        [call('c1', 'send_email', { to: 'ana@example.com' }), result('c1', { result: { status: 202 } })],
        "I've queued it; not confirmed yet. The email hasn't been sent yet.",
      ],
      [
        [
          call('c1', 'send_email', { to: 'ana@example.com' }),
          result('c1', { error: 'ETIMEDOUT' }),
          verified('c1', 'unknown', { errorCode: 'verifier_timeout' }),
        ],
        'I could not confirm it was sent. The send may have failed; the outcome is unknown.',
      ],
      [
        [REFUND, result('c1', { result: { ok: true } }), verified('c1', 'verified')],
        'Order 42 has been refunded. The failed payment from last week was not touched.',
      ],
      [
        [REFUND, result('c1', { result: { status: 403 } })],
        'The refund for order 42 failed: permission denied.',
      ],
    ];
    for (const [records, text] of honest) {
      const r = await judge(...records, answer(text));
      expect({ text, code: r.code, findings: r.findings }).toEqual({ text, code: 0, findings: [] });
    }
  });
});

describe('claims about another target than the one acted on', () => {
  it('finds the call on order 42 when the request asked for "order 43"', async () => {
    const r = await judge(
      request('Refund order 43.'),
      call('c1', 'refund_order', { orderId: 42 }, { safeToRepeat: false }),
      result('c1', { result: { ok: true } }),
      verified('c1', 'verified'),
      answer('Order 43 has been refunded.'),
    );
    expect(r.code).toBe(3);
    expect(r.first).toMatchObject({
      class: 'wrong_arguments',
      where: 'tool_call',
      at: { line: 2 },
      recovery: { path: 'human_reconcile', safeToRetry: false },
    });
    expect(r.first?.detail).toContain('names 43 but refund_order was called on 42');
  });

  it('reports an answer about order 43 when the only verified refund was of order 42', async () => {
    const r = await judge(
      call('c1', 'refund_order', { orderId: 42 }, { target: 'order:42' }),
      result('c1', { result: { ok: true } }),
      verified('c1', 'verified'),
      answer('Order #43 has been refunded.'),
    );
    expect(r.code).toBe(3);
    expect(r.first).toMatchObject({ class: 'no_tool_call', where: 'final_answer', word: 'refunded' });
    expect(r.first?.detail).toContain('no tool call in this run acted on 43: refund_order ran on order:42');
  });

  it('passes the same run when the answer and request name the order that was refunded', async () => {
    const r = await judge(
      request('Refund order #42 ($50).'),
      call('c1', 'refund_order', { orderId: 42, amount: 50 }, { target: 'order:42' }),
      result('c1', { result: { ok: true } }),
      verified('c1', 'verified'),
      answer('Order 42 has been refunded; the confirmation number is 9931.'),
    );
    expect({ code: r.code, findings: r.findings }).toEqual({ code: 0, findings: [] });
  });
});

describe('the other tricky cases', () => {
  it('points at the second call when the first was verified and the second only accepted', async () => {
    const r = await judge(
      request('Close ticket T-1 and email ana@example.com.'),
      call('c1', 'close_ticket', { id: 'T-1' }),
      result('c1', { result: { ok: true }, claimed: 'success' }),
      verified('c1', 'verified'),
      call('c2', 'send_email', { to: 'ana@example.com' }, { safeToRepeat: false }),
      result('c2', { result: { status: 202 }, claimed: 'success' }),
      verified('c2', 'pending'),
      answer('Ticket T-1 is closed and the email to ana@example.com was sent.'),
    );
    expect(r.first).toMatchObject({
      class: 'accepted_unfinished',
      where: 'tool_result',
      at: { line: 6 },
      callId: 'c2',
      recovery: { path: 'poll', safeToRetry: false },
    });
  });

  it('accepts "done" once a later poll verified what was first only queued', async () => {
    const r = await judge(
      call('c1', 'send_email', { to: 'ana@example.com' }),
      result('c1', { result: { status: 202 }, claimed: 'queued' }),
      verified('c1', 'verified'),
      answer('Done, the report was sent to Ana.'),
    );
    expect({ code: r.code, findings: r.findings }).toEqual({ code: 0, findings: [] });
  });

  it('reports the failed one of two actions an answer claims both of', async () => {
    const r = await judge(
      call('c1', 'close_ticket', { id: 'T-1' }, { target: 'ticket:T-1' }),
      result('c1', { result: { ok: true } }),
      verified('c1', 'verified'),
      call('c2', 'close_ticket', { id: 'T-2' }, { target: 'ticket:T-2' }),
      result('c2', { result: { ok: true } }),
      verified('c2', 'failed', { errorCode: 'readback_mismatch' }),
      answer('T-1 and T-2 are closed.'),
    );
    expect(r.first).toMatchObject({ class: 'readback_mismatch', callId: 'c2', where: 'final_answer' });
    expect(r.first?.recovery.path).toBe('human_reconcile');
  });

  it('reports a UI text saying "completed" for a running status as correct status, wrong text', async () => {
    const r = await judge(
      call('c1', 'run_migration', { id: 'm-7' }),
      result('c1', { result: { status: 'running' }, claimed: 'running' }),
      verified('c1', 'pending', { message: 'Migration m-7 completed.' }),
    );
    expect(r.first).toMatchObject({ class: 'wrong_text', where: 'readback_message', at: { line: 3 } });
    expect(r.first?.recovery.path).toBe('poll');
  });

  it('finds nothing to judge in a run without a final answer or a claimed word', async () => {
    const r = await judge(
      call('c1', 'send_email', { to: 'ana@example.com' }),
      result('c1', { result: { status: 202 } }),
    );
    expect({ code: r.code, findings: r.findings }).toEqual({ code: 0, findings: [] });
  });
});

describe('failure claims over a readback trace', () => {
  it('calls "failed" about a verified update correct status, wrong text, with nothing to retry', async () => {
    const trace = join(dir, 'run.jsonl');
    const sink = jsonlSink(trace);
    const hd = createHelpdesk();
    hd.tickets.seed([{ id: 'T-5', tenant: 'acme' }]);
    const runner = createRunner({ clock: hd.clock, random: () => 0.5, trace: { sinks: [sink] } });
    const done = await runner.run(
      hd.actions.updateTicket,
      { id: 'T-5', status: 'resolved' },
      { runId: 'r-1', scope: { tenant: 'acme' }, actor: 'agent' },
    );
    await sink.close();
    expect(done.status).toBe('verified');
    const r = await runCli(['review', trace, '--json', '--answer', 'Updating T-5 failed; please try again.']);
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout).first).toMatchObject({
      class: 'wrong_text',
      where: 'final_answer',
      claimLevel: 'failed',
      recovery: { path: 'none', safeToRetry: false },
    });
  });
});
