import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Completion } from '../../src/contract/types.js';
import { incidentFromStore } from '../../src/review/store-adapter.js';
import { createRunner } from '../../src/runner/runner.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import type { OperationStore } from '../../src/store/types.js';
import { createHelpdesk } from '../../src/testing/helpdesk.js';
import { runCli } from '../cli/support.js';

// Real runs of the helpdesk actions against the fakes, recorded in a real SQLite store; the fakes
// hold the truth each review is checked against.
let dir: string;
let db: string;
let hd: ReturnType<typeof createHelpdesk>;
const ops: Record<string, Completion> = {};
const truth: Record<string, string | undefined> = {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'readback-review-store-'));
  db = join(dir, 'runs.db');
  const store = await sqliteStore({ path: db });
  hd = createHelpdesk();
  hd.tickets.seed(['T-1', 'T-2', 'T-3', 'T-4'].map((id) => ({ id, tenant: 'acme' })));
  let seq = 0;
  const runner = createRunner({ store, clock: hd.clock, random: () => 0.5, newId: () => `op-${++seq}` });
  const ctx = (runId: string) => ({ runId, scope: { tenant: 'acme' }, actor: 'agent' });
  const mail = { subject: 'Invoice', body: 'Attached.' };
  ops.pending = await runner.run(
    hd.actions.sendEmail,
    { to: 'cy@example.com', ...mail },
    { ...ctx('r-pending'), wait: false },
  );
  // What the provider held when the agent answered; later runs move the fake clock past its delivery.
  truth.pending = (await hd.mail.lookup(ops.pending.idempotencyKey))?.status;
  hd.tickets.faults.loseNextResponse = true;
  ops.landed = await runner.run(hd.actions.updateTicket, { id: 'T-2', status: 'resolved' }, ctx('r-landed'));
  ops.wrong = await runner.run(hd.actions.updateTicket, { id: 'T-3', status: 'resolved' }, ctx('r-wrong'));
  hd.mail.faults.nextOutcome = 'dropped';
  ops.dropped = await runner.run(hd.actions.sendEmail, { to: 'bo@example.com', ...mail }, ctx('r-dropped'));
  await store.close();
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function withStore<T>(fn: (s: OperationStore) => Promise<T>): Promise<T> {
  const store = await sqliteStore({ path: db });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

async function review(args: string[]) {
  const r = await runCli(['review', '--store', db, ...args, '--json']);
  return { code: r.code, stderr: r.stderr, json: r.stdout ? JSON.parse(r.stdout) : undefined };
}

describe('readback review --store', () => {
  it('finds "sent" in the answer for mail the provider still holds queued: correct status, wrong text', async () => {
    expect(ops.pending!.status).toBe('pending');
    // The truth: the provider has the message, and it has not been delivered.
    expect(truth.pending).toBe('queued');
    const { code, json } = await review([
      '--run',
      'r-pending',
      '--answer',
      'Done, the invoice was sent to cy@example.com.',
    ]);
    expect(code).toBe(3);
    const first = json.first;
    expect(first).toMatchObject({
      class: 'wrong_text',
      where: 'final_answer',
      operationId: ops.pending!.operationId,
    });
    expect(first.recovery).toMatchObject({ path: 'poll', safeToRetry: true });
    // The evidence points at the event in the operation's log that recorded the pending status.
    const events = await withStore((s) => s.events(ops.pending!.operationId));
    const decided = events.findLast((e) => e.status === 'pending')!;
    expect(first.evidence.at).toMatchObject({ operationId: ops.pending!.operationId, seq: decided.seq });
  });

  it('passes an answer that says only what the read-back proved, after a lost response that had landed', async () => {
    expect(ops.landed!.status).toBe('verified');
    expect((await hd.tickets.get('T-2'))?.status).toBe('resolved');
    const incident = await withStore((s) => incidentFromStore(s, { runId: 'r-landed', source: 'db' }));
    // The store kept the transport error of the attempt; the read-back after it is what settled the status.
    expect(incident?.calls[0]?.result?.error).toMatch(/ETIMEDOUT|timed out|timeout/i);
    const { code, json } = await review(['--run', 'r-landed', '--answer', 'T-2 is resolved.']);
    expect(code).toBe(0);
    expect(json.findings).toEqual([]);
  });

  it("flags a call on another ticket than the request named, at the operation's first event", async () => {
    const { code, json } = await review([
      '--run',
      'r-wrong',
      '--request',
      'Resolve ticket T-1 please',
      '--answer',
      'T-1 is resolved.',
    ]);
    expect(code).toBe(3);
    expect(json.first).toMatchObject({
      class: 'wrong_arguments',
      where: 'tool_call',
      at: { operationId: ops.wrong!.operationId, seq: 1 },
      recovery: { path: 'human_reconcile' },
    });
    // The truth: T-3 changed, T-1 did not.
    expect((await hd.tickets.get('T-3'))?.status).toBe('resolved');
    expect((await hd.tickets.get('T-1'))?.status).toBe('open');
  });

  it('sends a dropped email claimed as sent to human reconcile, reading the answer from a file', async () => {
    expect(ops.dropped!.status).toBe('failed');
    expect((await hd.mail.lookup(ops.dropped!.idempotencyKey))?.status).toBe('dropped');
    const file = join(dir, 'answer.txt');
    writeFileSync(file, 'I emailed the invoice to bo@example.com.');
    const { code, json } = await review(['--run', 'r-dropped', '--answer-file', file]);
    expect(code).toBe(3);
    expect(json.first).toMatchObject({ class: 'wrong_text', operationId: ops.dropped!.operationId });
    expect(json.first.recovery.path).toBe('human_reconcile');
    expect(json.first.recovery.step).toContain(`readback ops resolve ${ops.dropped!.operationId}`);
  });

  it('refuses a --fixture-out that names an input, leaving the store, the trace and the answer intact', async () => {
    const answer = join(dir, 'answer-kept.txt');
    writeFileSync(answer, 'I emailed the invoice to bo@example.com.');
    const trace = join(dir, 'kept.jsonl');
    writeFileSync(trace, '{"kind":"request","text":"hi"}\n');
    const before = [db, answer, trace].map((f) => readFileSync(f));
    const cases: [string[], string][] = [
      [
        ['--store', db, '--run', 'r-dropped', '--fixture-out', relative(process.cwd(), db)],
        'store under review',
      ],
      [
        ['--store', db, '--run', 'r-dropped', '--answer-file', answer, '--fixture-out', answer],
        'answer file',
      ],
      [[trace, '--fixture-out', trace], 'trace under review'],
    ];
    for (const [args, what] of cases) {
      const r = await runCli(['review', ...args]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`option '--fixture-out': ${args.at(-1)} is the ${what}`);
    }
    expect([db, answer, trace].map((f) => readFileSync(f))).toEqual(before);
  });

  it('reports a run with no operations as an error, not a clean review', async () => {
    const r = await runCli(['review', '--store', db, '--run', 'no-such-run']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("no operations for run 'no-such-run'");
  });
});
