import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunner } from '../../src/runner/runner.js';
import { createHelpdesk } from '../../src/testing/helpdesk.js';
import { jsonlSink } from '../../src/trace/index.js';
import { runCli } from '../cli/support.js';

const dir = mkdtempSync(join(tmpdir(), 'readback-review-call-id-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// One run in which the framework numbers tool calls per turn, so two calls share the model's id "call_0":
// the update of T-1 never lands, the update of T-2 does.
let trace: string;
beforeAll(async () => {
  trace = join(dir, 'run.jsonl');
  const sink = jsonlSink(trace);
  const hd = createHelpdesk();
  hd.tickets.seed([
    { id: 'T-1', tenant: 'acme' },
    { id: 'T-2', tenant: 'acme' },
  ]);
  const runner = createRunner({ clock: hd.clock, random: () => 0.5, trace: { sinks: [sink] } });
  const ctx = { runId: 'r-1', scope: { tenant: 'acme' }, actor: 'agent', toolCallId: 'call_0' };
  hd.tickets.faults.softFailNextWrite = true;
  const a = await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, { ...ctx, turn: 1 });
  const b = await runner.run(hd.actions.updateTicket, { id: 'T-2', status: 'resolved' }, { ...ctx, turn: 2 });
  expect([a.status, b.status]).toEqual(['failed', 'verified']);
  await sink.close();
});

describe('readback review of a run whose calls reuse a tool call id', () => {
  it('keeps the two calls apart and finds the failed T-1 the answer called resolved (the merged call was T-2 alone)', async () => {
    const r = await runCli(['review', trace, '--json', '--answer', 'T-1 is resolved. T-2 is resolved too.']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(3);
    const json = JSON.parse(r.stdout);
    expect(json.calls).toBe(2);
    const completions = readFileSync(trace, 'utf8')
      .split('\n')
      .flatMap((l, i) => (l !== '' && JSON.parse(l).type === 'completion' ? [i + 1] : []));
    expect(json.first).toMatchObject({
      class: 'wrong_text',
      where: 'final_answer',
      target: 'ticket:T-1',
      evidence: { status: 'failed', at: { line: completions[0] } },
    });
  });

  it('passes the run when the answer reports T-1 failed and T-2 resolved', async () => {
    const r = await runCli(['review', trace, '--answer', 'T-1 could not be updated. T-2 is resolved.']);
    expect(r.stdout).toContain('no unsupported transition');
    expect(r.code).toBe(0);
  });
});

describe('readback review of a poll between two calls that reuse a tool call id', () => {
  it('puts the poll on the queued email and the next "call_0" on its own call', async () => {
    const path = join(dir, 'poll.jsonl');
    const sink = jsonlSink(path);
    const hd = createHelpdesk();
    hd.tickets.seed([{ id: 'T-3', tenant: 'acme' }]);
    const runner = createRunner({ clock: hd.clock, random: () => 0.5, trace: { sinks: [sink] } });
    const ctx = { runId: 'r-2', scope: { tenant: 'acme' }, actor: 'agent', toolCallId: 'call_0' };
    const mail = await runner.run(
      hd.actions.sendEmail,
      { to: 'dee@example.com', subject: 'T-3', body: 'Done.' },
      { ...ctx, wait: false },
    );
    expect(mail.status).toBe('pending');
    hd.clock.advance(5_000);
    expect((await runner.poll(mail.operationId)).status).toBe('verified');
    const ticket = await runner.run(hd.actions.updateTicket, { id: 'T-3', status: 'resolved' }, ctx);
    expect(ticket.status).toBe('verified');
    await sink.close();
    const r = await runCli([
      'review',
      path,
      '--json',
      '--answer',
      'The email to dee@example.com was sent. T-3 is resolved.',
    ]);
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toMatchObject({ calls: 2, findings: [] });
    expect(r.code).toBe(0);
  });
});

describe('locations in a readback trace', () => {
  it("name the line and the operation, not the call's event number as if it were the operation's", async () => {
    const r = await runCli(['review', trace, '--answer', 'T-1 is resolved.']);
    expect(r.code).toBe(3);
    const line =
      readFileSync(trace, 'utf8')
        .split('\n')
        .findIndex((l) => l.includes('"type":"completion"')) + 1;
    expect(r.stdout).toMatch(new RegExp(`\\[line ${line}, operation op_[0-9a-f-]+\\]`));
  });
});

describe('readback review of concurrent calls that share a tool call id', () => {
  async function concurrent(ids: [string, string]): Promise<string> {
    const path = join(dir, `concurrent-${ids.join('-')}.jsonl`);
    const sink = jsonlSink(path);
    const hd = createHelpdesk();
    hd.tickets.seed([
      { id: 'T-1', tenant: 'acme' },
      { id: 'T-2', tenant: 'acme' },
    ]);
    const runner = createRunner({ clock: hd.clock, random: () => 0.5, trace: { sinks: [sink] } });
    const ctx = { runId: 'r-3', scope: { tenant: 'acme' }, actor: 'agent' };
    hd.tickets.faults.softFailNextWrite = true;
    const done = await Promise.all([
      runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, { ...ctx, toolCallId: ids[0] }),
      runner.run(hd.actions.updateTicket, { id: 'T-2', status: 'resolved' }, { ...ctx, toolCallId: ids[1] }),
    ]);
    expect(done.map((c) => c.status)).toEqual(['failed', 'verified']);
    await sink.close();
    return path;
  }

  it('refuses, naming the line, when their events interleave, instead of mixing T-1 and T-2', async () => {
    const path = await concurrent(['call_0', 'call_0']);
    const r = await runCli(['review', path, '--answer', 'T-1 is resolved. T-2 is resolved.']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/line \d+: field 'seq': .*call id "call_0".*cannot be told apart/);
  });

  it('reviews them when each has its own id', async () => {
    const path = await concurrent(['call_0', 'call_1']);
    const r = await runCli(['review', path, '--json', '--answer', 'T-1 is resolved. T-2 is resolved.']);
    expect(r.code).toBe(3);
    const json = JSON.parse(r.stdout);
    expect(json.calls).toBe(2);
    expect(json.findings).toHaveLength(1);
    expect(json.first).toMatchObject({ target: 'ticket:T-1', evidence: { status: 'failed' } });
  });
});

describe('readback review of a retry under the same tool call id', () => {
  // The retry of T-1 finds the first call's record (nothing re-executes) and gets its status again.
  it.each([
    ['every event type', undefined],
    ['a sink that leaves run.started out', ['tool.selected', 'execute.finished', 'completion'] as const],
  ])('gives the retry its own call and read-back (%s)', async (_, types) => {
    const path = join(dir, `retry-${types ? 'some' : 'all'}.jsonl`);
    const sink = jsonlSink(path, types ? { types } : {});
    const hd = createHelpdesk();
    hd.tickets.seed([
      { id: 'T-1', tenant: 'acme' },
      { id: 'T-2', tenant: 'acme' },
    ]);
    const runner = createRunner({ clock: hd.clock, random: () => 0.5, trace: { sinks: [sink] } });
    const ctx = { runId: 'r-4', scope: { tenant: 'acme' }, actor: 'agent', toolCallId: 'call_0' };
    hd.tickets.faults.softFailNextWrite = true;
    const first = await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, ctx);
    const retry = await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, ctx);
    const other = await runner.run(hd.actions.updateTicket, { id: 'T-2', status: 'resolved' }, ctx);
    expect([first.status, retry.status, other.status]).toEqual(['failed', 'failed', 'verified']);
    expect(retry.operationId).toBe(first.operationId);
    await sink.close();
    const r = await runCli(['review', path, '--json', '--answer', 'T-1 is resolved. T-2 is resolved.']);
    expect(r.stderr).toBe('');
    const json = JSON.parse(r.stdout);
    expect(json.calls).toBe(3);
    // Only the T-1 claim is unsupported, by the failed read-back; no call is left without one ("unknown").
    expect(
      json.findings.map((f: { target: string; evidence: { status: string } }) => f.evidence.status),
    ).toEqual(['failed']);
    expect(json.first).toMatchObject({ target: 'ticket:T-1' });
  });
});
