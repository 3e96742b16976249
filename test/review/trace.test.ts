import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunner } from '../../src/runner/runner.js';
import { createHelpdesk } from '../../src/testing/helpdesk.js';
import { jsonlSink } from '../../src/trace/index.js';
import { runCli } from '../cli/support.js';

// readback's own trace, written by the real runner through its JSONL sink while it drives the fakes.
let dir: string;
let trace: string;
let hd: ReturnType<typeof createHelpdesk>;
let mailStatusAtAnswer: string | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'readback-review-trace-'));
  trace = join(dir, 'run.jsonl');
  const sink = jsonlSink(trace);
  hd = createHelpdesk();
  hd.tickets.seed([{ id: 'T-5', tenant: 'acme' }]);
  const runner = createRunner({
    clock: hd.clock,
    random: () => 0.5,
    trace: { sinks: [sink], recordArguments: true },
  });
  const ctx = { runId: 'r-trace', scope: { tenant: 'acme' }, actor: 'agent' };
  await runner.run(hd.actions.updateTicket, { id: 'T-5', status: 'resolved' }, ctx);
  const mail = await runner.run(
    hd.actions.sendEmail,
    { to: 'dee@example.com', subject: 'T-5', body: 'Resolved.' },
    { ...ctx, wait: false },
  );
  mailStatusAtAnswer = (await hd.mail.lookup(mail.idempotencyKey))?.status;
  await sink.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function lineOf(type: string, action: string): number {
  const lines = readFileSync(trace, 'utf8').split('\n');
  return (
    lines.findIndex(
      (l) => l.trim() !== '' && JSON.parse(l).type === type && JSON.parse(l).action === action,
    ) + 1
  );
}

describe('readback review on a readback trace', () => {
  it('finds the answer that called queued mail sent, with the evidence at the completion event line', async () => {
    expect(mailStatusAtAnswer).toBe('queued');
    const r = await runCli([
      'review',
      trace,
      '--json',
      '--request',
      'Resolve T-5 and tell dee@example.com',
      '--answer',
      'T-5 is resolved and the email to dee@example.com was sent.',
    ]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(3);
    const json = JSON.parse(r.stdout);
    expect(json.format).toBe('trace');
    expect(json.calls).toBe(2);
    expect(json.first).toMatchObject({
      class: 'wrong_text',
      where: 'final_answer',
      action: 'send_email',
      target: 'email:dee@example.com',
      at: { part: 'the final answer (--answer)' },
      evidence: { status: 'pending', at: { line: lineOf('completion', 'send_email') } },
      recovery: { path: 'poll', safeToRetry: true },
    });
    // The verified ticket claim is not a finding: only the email sentence is.
    expect(json.findings).toHaveLength(1);
  });

  it('passes the same run when the answer says the email is only queued', async () => {
    const r = await runCli([
      'review',
      trace,
      '--answer',
      'T-5 is resolved. The email to dee@example.com is queued and not delivered yet.',
    ]);
    expect(r.stdout).toContain('no unsupported transition');
    expect(r.code).toBe(0);
  });
});

describe('readback review on a shadow trace', () => {
  it('judges the claim of the live tool, which the agent got, against what readback found', async () => {
    const shadowDir = mkdtempSync(join(tmpdir(), 'readback-review-shadow-'));
    try {
      const path = join(shadowDir, 'shadow.jsonl');
      const sink = jsonlSink(path);
      const desk = createHelpdesk();
      desk.tickets.seed([{ id: 'T-9', tenant: 'acme' }]);
      const runner = createRunner({
        clock: desk.clock,
        random: () => 0.5,
        shadow: true,
        trace: { sinks: [sink] },
      });
      // The live tool says ok, but its write never landed: readback finds it failed; the agent only saw "ok".
      desk.tickets.faults.softFailNextWrite = true;
      const out = await runner.shadow(
        desk.actions.updateTicket,
        { id: 'T-9', status: 'resolved' },
        { runId: 'r-shadow', scope: { tenant: 'acme' }, actor: 'agent' },
      );
      expect(out.completion.shadow).toMatchObject({ claimed: 'success', status: 'failed', agrees: false });
      await sink.close();
      const r = await runCli(['review', path, '--json']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(3);
      const json = JSON.parse(r.stdout);
      expect(json.first).toMatchObject({
        class: 'readback_mismatch',
        where: 'tool_result',
        action: 'update_ticket',
      });
    } finally {
      rmSync(shadowDir, { recursive: true, force: true });
    }
  });
});
