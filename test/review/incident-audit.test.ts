import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunner } from '../../src/runner/runner.js';
import { createHelpdesk } from '../../src/testing/helpdesk.js';
import { jsonlSink } from '../../src/trace/index.js';
import { runCli } from '../cli/support.js';

const dir = mkdtempSync(join(tmpdir(), 'readback-review-audit-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, records: object[], tail = '\n'): string {
  const path = join(dir, name);
  writeFileSync(path, records.map((r) => JSON.stringify(r)).join('\n') + tail);
  return path;
}

// One service-wide JSONL sink, two agent runs that both number their tool calls from "call_0" (as
// frameworks without model tool-call ids do): run A resolves T-1, run B's update of T-2 never lands.
let shared: string;
beforeAll(async () => {
  shared = join(dir, 'service.jsonl');
  const sink = jsonlSink(shared);
  const hd = createHelpdesk();
  hd.tickets.seed([
    { id: 'T-1', tenant: 'acme' },
    { id: 'T-2', tenant: 'acme' },
  ]);
  const runner = createRunner({ clock: hd.clock, random: () => 0.5, trace: { sinks: [sink] } });
  const scope = { tenant: 'acme' };
  const a = await runner.run(
    hd.actions.updateTicket,
    { id: 'T-1', status: 'resolved' },
    { runId: 'r-a', scope, actor: 'agent', toolCallId: 'call_0' },
  );
  hd.tickets.faults.softFailNextWrite = true;
  const b = await runner.run(
    hd.actions.updateTicket,
    { id: 'T-2', status: 'resolved' },
    { runId: 'r-b', scope, actor: 'agent', toolCallId: 'call_0' },
  );
  expect([a.status, b.status]).toEqual(['verified', 'failed']);
  await sink.close();
});

describe('readback review of a readback trace holding several runs', () => {
  it('reviews only the run named by --run, keeping calls of other runs with the same call id apart', async () => {
    const r = await runCli(['review', shared, '--run', 'r-b', '--json', '--answer', 'T-2 is resolved.']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(3);
    const json = JSON.parse(r.stdout);
    expect(json.calls).toBe(1);
    expect(json.first).toMatchObject({
      class: 'wrong_text',
      where: 'final_answer',
      target: 'ticket:T-2',
      evidence: { status: 'failed' },
    });
  });

  it('passes run A, whose ticket did resolve, instead of judging it by run B', async () => {
    const r = await runCli(['review', shared, '--run', 'r-a', '--answer', 'T-1 is resolved.']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('no unsupported transition');
    expect(r.code).toBe(0);
  });

  it('refuses to mix runs: without --run it names the runs to choose from', async () => {
    const r = await runCli(['review', shared, '--answer', 'T-2 is resolved.']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/2 runs.*r-a.*r-b.*--run/);
  });

  it('reports a --run the trace does not hold as an error, naming the runs it does', async () => {
    const r = await runCli(['review', shared, '--run', 'r-zzz', '--json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout).error).toMatchObject({ kind: 'failed', exitCode: 1 });
    expect(r.stderr).toMatch(/no events of run 'r-zzz'.*r-a, r-b/);
  });

  it('still refuses --run on a plain trace, which has no runs', async () => {
    const path = file('plain-run.jsonl', [{ kind: 'request', text: 'Close T-1.' }]);
    const r = await runCli(['review', path, '--run', 'r-a']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("'--run'");
  });
});

describe('readback review on large traces', () => {
  it('reviews a trace with 100 000 tool calls instead of overflowing the stack', async () => {
    const records: object[] = [{ kind: 'request', text: 'Email ana@example.com.' }];
    for (let i = 0; i < 100_000; i++)
      records.push({ kind: 'tool_call', id: `c${i}`, name: 'lookup', args: { q: 'x' } });
    const path = file('big.jsonl', records);
    const r = await runCli(['review', path, '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).calls).toBe(100_000);
  }, 60_000);
});

describe('readback review --fixture-out', () => {
  it('writes a fixture that re-reviews to the same class when the answer also reports another call', async () => {
    const path = file('two-calls.jsonl', [
      { kind: 'request', text: 'Refund order 42 and email ana@example.com.' },
      { kind: 'tool_call', id: 'c1', name: 'refund_order', args: { orderId: 42 } },
      { kind: 'tool_result', call: 'c1', result: { ok: true } },
      { kind: 'verification', call: 'c1', status: 'verified', operationId: 'op-1' },
      { kind: 'tool_call', id: 'c2', name: 'send_email', args: { to: 'ana@example.com' } },
      { kind: 'tool_result', call: 'c2', result: { status: 202 } },
      { kind: 'final_answer', text: 'Order 42 was refunded. The email to ana@example.com was sent.' },
    ]);
    const out = join(dir, 'two-calls.fixture.json');
    const first = await runCli(['review', path, '--json', '--fixture-out', out]);
    expect(first.code).toBe(3);
    expect(JSON.parse(first.stdout).first).toMatchObject({ class: 'accepted_unfinished', callId: 'c2' });
    const fixture = JSON.parse(readFileSync(out, 'utf8'));
    expect(fixture.expected).toMatchObject({ class: 'accepted_unfinished', where: 'final_answer' });
    const again = await runCli(['review', out, '--json']);
    expect(again.code).toBe(3);
    expect(JSON.parse(again.stdout).first).toMatchObject({
      class: fixture.expected.class,
      where: fixture.expected.where,
    });
  });
});
