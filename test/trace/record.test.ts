import { describe, expect, it, vi } from 'vitest';
import { hashOf } from '../../src/canonical.js';
import type { Completion } from '../../src/contract/types.js';
import {
  createRunner,
  defineAction,
  memoryStore,
  TRACE_FORMAT_VERSION,
  type TraceEvent,
} from '../../src/index.js';
import { Tracer } from '../../src/runner/tracer.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { COMMITTED_UPDATE_EVENTS, ctx, ofType, sha256OfCanonical, tracedSetup } from './support.js';

describe('the run record', () => {
  it('run.started names a tool call id only when the caller gave one, not the one readback generated', async () => {
    const { hd, runner, events } = tracedSetup();
    await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(events[0]?.type).toBe('run.started');
    expect(events[0]?.callId).toMatch(/^call_/);
    expect(events[0]).not.toHaveProperty('toolCallId');
  });

  it('a verified run records every step, in order, with the format version and one call id', async () => {
    const { hd, runner, events } = tracedSetup();
    const c = await runner.run(
      hd.actions.updateTicket,
      { id: 'T-104', status: 'resolved' },
      {
        ...ctx,
        actor: 'agent-1',
        turn: 3,
        tenant: 'acme',
        environment: 'staging',
        toolsExposed: ['update_ticket', 'send_email'],
        toolCallId: 'call_abc',
      },
    );
    expect(c.status).toBe('verified');
    expect(events.map((e) => e.type)).toEqual(COMMITTED_UPDATE_EVENTS);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    for (const e of events) {
      expect(e).toMatchObject({
        v: TRACE_FORMAT_VERSION,
        runId: 'run-7f2c',
        callId: 'call_abc',
        action: 'update_ticket',
      });
    }
    expect(events[0]).toMatchObject({
      entry: 'run',
      turn: 3,
      tenant: 'acme',
      actor: 'agent-1',
      environment: 'staging',
      toolsExposed: ['update_ticket', 'send_email'],
      toolCallId: 'call_abc',
      mode: 'committed',
    });
    // Everything from the reservation on names the operation the completion reports.
    for (const e of events.slice(3)) expect(e.operationId).toBe(c.operationId);

    const [selected] = ofType(events, 'tool.selected');
    expect(selected).toMatchObject({ valid: true, target: 'ticket:T-104' });
    expect(selected?.argsHash).toBe(sha256OfCanonical({ id: 'T-104', status: 'resolved' }));
    expect(selected).not.toHaveProperty('args');
    expect(ofType(events, 'permission.decided')[0]).toMatchObject({ allowed: true, policy: true });
    expect(ofType(events, 'operation.reserved')[0]).toMatchObject({
      idempotencyKey: c.idempotencyKey,
      reservation: 'created',
    });

    const [baseline, verify] = ofType(events, 'observe');
    expect(baseline).toMatchObject({ phase: 'baseline', result: 'observed', attempt: 0 });
    expect(verify).toMatchObject({
      phase: 'verify',
      result: 'observed',
      verdict: 'pass',
      attempt: 1,
      readAt: c.observedAt,
      query: { target: 'ticket:T-104', inputHash: selected?.argsHash },
    });
    expect(verify?.observed).toEqual(c.evidence);
    expect(verify?.checks).toEqual(c.checks);

    const written = (await hd.tickets.get('T-104'))!;
    const [finished] = ofType(events, 'execute.finished');
    expect(finished).toMatchObject({
      attempt: 1,
      claimed: 'success',
      raw: { ok: true, version: written.version },
      normalized: { kind: 'returned' },
    });

    const completion = ofType(events, 'completion')[0]!;
    expect(completion).toMatchObject({
      status: 'verified',
      claimed: 'success',
      verified: true,
      message: c.message,
      nextAllowedAction: 'none',
      attempt: 1,
    });
  });

  it('state transitions match the operation log the store kept', async () => {
    const { hd, runner, events } = tracedSetup();
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    const log = await runner.store.events(c.operationId);
    expect(
      ofType(events, 'state.transition').map((e) => [e.event, e.from, e.to, e.status, e.attempt]),
    ).toEqual(log.map((e) => [e.type, e.from, e.to, e.status, e.attempt]));
  });

  it('keeps the claim and the observation apart: a write that reports success but changed nothing', async () => {
    const { hd, runner, events } = tracedSetup();
    hd.tickets.faults.softFailNextWrite = true;
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);

    expect(c.status).toBe('failed');
    expect((await hd.tickets.get('T-104'))?.status).toBe('open');
    const finished = ofType(events, 'execute.finished')[0]!;
    expect(finished.claimed).toBe('success');
    expect(finished.raw).toMatchObject({ ok: true });
    const verify = ofType(events, 'observe').find((e) => e.phase === 'verify')!;
    expect(verify.observed).toMatchObject({ status: 'open' });
    expect(verify.verdict).not.toBe('pass');
    expect(ofType(events, 'completion')[0]).toMatchObject({
      status: 'failed',
      claimed: 'success',
      verified: false,
      errorCode: c.errorCode,
    });
  });

  it('hashes the same arguments the same across runners and runs, and records them only when opted in', async () => {
    const a = tracedSetup();
    const b = tracedSetup({ trace: { recordArguments: true } });
    await a.runner.run(a.hd.actions.updateTicket, { status: 'resolved', id: 'T-104' }, ctx);
    await b.runner.run(b.hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, { runId: 'other' });
    const [sa] = ofType(a.events, 'tool.selected');
    const [sb] = ofType(b.events, 'tool.selected');
    expect(sa?.argsHash).toBe(sb?.argsHash);
    expect(sa).not.toHaveProperty('args');
    expect(sb?.args).toEqual({ id: 'T-104', status: 'resolved' });
  });

  it('with recordResults: false the raw result is replaced by its hash', async () => {
    const { hd, runner, events } = tracedSetup({ trace: { recordResults: false } });
    await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    const written = (await hd.tickets.get('T-104'))!;
    const finished = ofType(events, 'execute.finished')[0]!;
    expect(finished).not.toHaveProperty('raw');
    expect(finished.rawHash).toBe(sha256OfCanonical({ ok: true, version: written.version }));
    expect(finished.claimed).toBe('success');
  });

  it('invalid input: the selection is recorded invalid and nothing is reserved or executed', async () => {
    const { hd, runner, events } = tracedSetup();
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'done' }, ctx);
    expect(c.errorCode).toBe('invalid_input');
    expect(events.map((e) => e.type)).toEqual(['run.started', 'tool.selected', 'completion']);
    expect(ofType(events, 'tool.selected')[0]).toMatchObject({
      valid: false,
      argsHash: sha256OfCanonical({ id: 'T-104', status: 'done' }),
    });
    expect(ofType(events, 'tool.selected')[0]?.issues?.[0]).toMatch(/^status:/);
    expect(ofType(events, 'completion')[0]).toMatchObject({ claimed: 'none', verified: false });
    expect(hd.tickets.writes).toEqual([]);
  });

  it('a denied call records the permission decision and stops there', async () => {
    const { hd, runner, events } = tracedSetup({ helpdesk: { deniedActors: ['intern'] } });
    const c = await runner.run(
      hd.actions.updateTicket,
      { id: 'T-104', status: 'resolved' },
      { ...ctx, actor: 'intern' },
    );
    expect(c.errorCode).toBe('not_authorized');
    expect(ofType(events, 'permission.decided')[0]).toMatchObject({
      allowed: false,
      policy: true,
      reason: 'intern may not change tickets',
    });
    expect(events.map((e) => e.type)).not.toContain('execute.started');
    expect(hd.tickets.writes).toEqual([]);
  });

  it('a lost response: execute threw, the claim is an error, the read back still verifies', async () => {
    const { hd, runner, events } = tracedSetup();
    hd.tickets.faults.loseNextResponse = true;
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(c.status).toBe('verified');
    const finished = ofType(events, 'execute.finished')[0]!;
    expect(finished).toMatchObject({ claimed: 'error', normalized: { kind: 'threw' } });
    expect(finished.normalized.reason).toMatch(/ETIMEDOUT/);
    expect(finished).not.toHaveProperty('raw');
    expect(ofType(events, 'observe').map((e) => e.phase)).toEqual(['baseline', 'in_doubt']);
    expect(ofType(events, 'completion')[0]).toMatchObject({ claimed: 'error', verified: true });
  });

  it('an execute that outlives its deadline: timed_out, recorded before the read back that verifies it', async () => {
    const rows = new Map<string, string>();
    const events: TraceEvent[] = [];
    const runner = createRunner({
      store: memoryStore(),
      trace: { sinks: [{ write: (e) => void events.push(e) }] },
    });
    const action = defineAction({
      name: 'set_status',
      description: 'Sets a row status; the response never comes back',
      input: { '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => ({ value }) } },
      target: (input: { id: string }) => `row:${input.id}`,
      postcondition: 'The row has the status.',
      executeTimeoutMs: 20,
      execute: async (input: { id: string; status: string }) => {
        rows.set(input.id, input.status);
        await new Promise(() => {});
      },
      observe: async (input: { id: string }) => (rows.has(input.id) ? { status: rows.get(input.id) } : null),
      expect: (input: { status: string }) => ({ status: input.status }),
    });
    const c = await runner.run(action, { id: 'r1', status: 'done' }, { runId: 'r' });
    expect(c.status).toBe('verified');
    const finished = ofType(events, 'execute.finished')[0]!;
    expect(finished).toMatchObject({ claimed: 'error', normalized: { kind: 'timed_out' } });
    expect(finished.normalized.reason).toMatch(/execute did not answer within 20 ms/);
    const order = events.map((e) => e.type);
    expect(order.indexOf('execute.started')).toBeLessThan(order.indexOf('execute.finished'));
    expect(order.indexOf('execute.finished')).toBeLessThan(order.indexOf('observe'));
    expect(ofType(events, 'observe').map((e) => e.phase)).toEqual(['in_doubt']);
  });

  it('a redaction rule that throws never changes the run: it verifies, and the events fail closed', async () => {
    const { hd, runner, events } = tracedSetup({
      trace: {
        redaction: {
          rules: [
            {
              name: 'flaky',
              value: /resolved/,
              replace: () => {
                throw new Error('rule failed');
              },
            },
          ],
        },
      },
    });
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(c.status).toBe('verified');
    expect((await hd.tickets.get('T-104'))?.status).toBe('resolved');
    expect((await runner.store.get(c.operationId))?.status).toBe('verified');
    expect(ofType(events, 'completion')[0]!.evidence).toMatchObject({ status: '[redacted:flaky]' });
    expect(JSON.stringify(events)).not.toMatch(/resolved/);
  });

  it('accepted work: one poll event per provider lookup, and the accepted claim', async () => {
    const { hd, runner, events } = tracedSetup();
    const c = await runner.run(
      hd.actions.sendEmail,
      { to: 'ana@example.com', subject: 'Proposal', body: 'Attached.' },
      ctx,
    );
    expect(c.status).toBe('verified');
    const polls = ofType(events, 'observe').filter((e) => e.phase === 'poll');
    expect(polls.length).toBe(hd.mail.calls.filter((call) => call.method === 'lookup').length);
    expect(polls.length).toBeGreaterThan(1);
    expect(polls.at(-1)).toMatchObject({ terminal: 'succeeded', verdict: 'pass' });
    expect(polls[0]).toMatchObject({ terminal: 'running' });
    expect(ofType(events, 'execute.finished')[0]).toMatchObject({
      claimed: 'accepted',
      normalized: { kind: 'accepted' },
    });
    const completion = ofType(events, 'completion')[0]!;
    expect(completion.verificationMs).toBe(
      Date.parse(completion.at) - Date.parse(ofType(events, 'execute.finished')[0]!.at),
    );
    expect(completion.verificationMs).toBeGreaterThan(0);
  });

  it('a known rejection is recorded as rejected with its code, not as a claim of success', async () => {
    const { hd, runner, events } = tracedSetup();
    const c = await runner.run(
      hd.actions.updateTicket,
      { id: 'T-104', status: 'resolved', expectedVersion: 99 },
      ctx,
    );
    expect(c.status).toBe('failed');
    expect(ofType(events, 'execute.finished')[0]).toMatchObject({
      claimed: 'rejected',
      normalized: { kind: 'rejected', code: 'version_conflict' },
      raw: { ok: false, code: 'version_conflict' },
    });
  });

  it('a result body that says it failed is a failure claim; a custom claimOf decides when given', async () => {
    const { hd, events } = tracedSetup();
    const action = hd.actions.updateTicket;
    const runner = createRunner({
      clock: hd.clock,
      trace: {
        sinks: [{ write: (e) => void events.push(e) }],
        claimOf: (raw) => ((raw as { version?: number }).version ? 'failure' : 'success'),
      },
    });
    await runner.run(action, { id: 'T-104', status: 'resolved' }, ctx);
    expect(ofType(events, 'execute.finished')[0]?.claimed).toBe('failure');
  });

  it('a duplicate call joins the operation in flight and records that', async () => {
    const { hd, runner, events } = tracedSetup();
    const input = { id: 'T-104', status: 'resolved' } as const;
    const [a, b] = await Promise.all([
      runner.run(hd.actions.updateTicket, input, ctx),
      runner.run(hd.actions.updateTicket, input, ctx),
    ]);
    expect(b.operationId).toBe(a.operationId);
    // The second call joins while the first one's reservation is still being written: order is by time.
    const reservations = ofType(events, 'operation.reserved');
    expect(reservations.map((e) => e.reservation).sort()).toEqual(['created', 'joined']);
    expect(reservations.map((e) => e.operationId)).toEqual([a.operationId, a.operationId]);
    expect(ofType(events, 'execute.started')).toHaveLength(1);
    expect(hd.tickets.writes).toHaveLength(1);
  });

  it('a poll is recorded as its own call on the same operation', async () => {
    const { hd, runner, events } = tracedSetup();
    const pending = await runner.run(
      hd.actions.sendEmail,
      { to: 'ana@example.com', subject: 'Hi', body: 'x' },
      { ...ctx, wait: false },
    );
    expect(pending.status).toBe('pending');
    await hd.clock.sleep(5_000);
    const polled = await runner.poll(pending.operationId);
    expect(polled.status).toBe('verified');
    const pollCall = events.filter((e) => e.callId === ofType(events, 'run.started')[1]?.callId);
    expect(pollCall[0]).toMatchObject({
      type: 'run.started',
      entry: 'poll',
      operationId: pending.operationId,
    });
    expect(pollCall.at(-1)).toMatchObject({ type: 'completion', status: 'verified', claimed: 'none' });
    expect(new Set(ofType(events, 'run.started').map((e) => e.callId)).size).toBe(2);
  });

  it('a reconciler pass is recorded as its own call, with its reads, on the same operation', async () => {
    const { hd, runner, events } = tracedSetup();
    const pending = await runner.run(
      hd.actions.sendEmail,
      { to: 'ana@example.com', subject: 'Hi', body: 'x' },
      { ...ctx, wait: false },
    );
    await hd.clock.sleep(5_000);
    const report = await runner.reconcile({ once: true, owner: 'worker-1' });
    expect(report.byStatus.verified).toBe(1);
    const started = ofType(events, 'run.started').find((e) => e.entry === 'reconcile')!;
    expect(started).toMatchObject({ actor: 'worker-1', operationId: pending.operationId, runId: 'run-7f2c' });
    const call = events.filter((e) => e.callId === started.callId);
    expect(call.some((e) => e.type === 'observe' && e.phase === 'poll')).toBe(true);
    expect(call.at(-1)).toMatchObject({
      type: 'completion',
      status: 'verified',
      operationId: pending.operationId,
    });
    expect(call.some((e) => e.type === 'execute.started')).toBe(false);
  });

  it('a call that throws records run.error', async () => {
    const { hd, runner, events } = tracedSetup();
    await runner.store.close();
    await expect(
      runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx),
    ).rejects.toThrow(/closed/);
    expect(events.at(-1)).toMatchObject({
      type: 'run.error',
      error: { name: 'ReadbackError', code: 'store_closed' },
    });
  });

  it('a sink that throws or rejects never changes the outcome; the error handler hears about it', async () => {
    const hd = createHelpdesk();
    hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
    const seen: unknown[] = [];
    const good: string[] = [];
    const runner = createRunner({
      clock: hd.clock,
      trace: {
        sinks: [
          {
            write() {
              throw new Error('disk full');
            },
          },
          { write: async () => Promise.reject(new Error('network down')) },
          { write: (e) => void good.push(e.type) },
        ],
        onSinkError: (error) => seen.push((error as Error).message),
      },
    });
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    await new Promise((r) => setImmediate(r));
    expect(c.status).toBe('verified');
    expect(good.at(-1)).toBe('completion');
    expect(seen.filter((m) => m === 'disk full')).toHaveLength(good.length);
    expect(seen.filter((m) => m === 'network down')).toHaveLength(good.length);
  });

  it('no sinks: no events are built (a custom claimOf is never consulted)', async () => {
    const hd = createHelpdesk();
    hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
    const claimOf = vi.fn(() => 'success' as const);
    const runner = createRunner({ clock: hd.clock, store: memoryStore(), trace: { sinks: [], claimOf } });
    expect((await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx)).status).toBe(
      'verified',
    );
    expect(claimOf).not.toHaveBeenCalled();
  });

  it('sinks that list their event types get only those, and types nobody lists are never built', async () => {
    const hd = createHelpdesk();
    hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
    const completions: TraceEvent[] = [];
    const executes: TraceEvent[] = [];
    const runner = createRunner({
      clock: hd.clock,
      trace: {
        sinks: [
          { types: new Set(['completion'] as const), write: (e) => void completions.push(e) },
          { types: new Set(['execute.finished'] as const), write: (e) => void executes.push(e) },
        ],
      },
    });
    await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(completions.map((e) => [e.type, e.seq])).toEqual([['completion', 2]]);
    expect(executes.map((e) => [e.type, e.seq])).toEqual([['execute.finished', 1]]);
  });

  it('the argument hash reaches a sink taking only tool.selected or only observe, and matches the input', async () => {
    const input = { id: 'T-104', status: 'resolved' };
    for (const type of ['tool.selected', 'observe'] as const) {
      const hd = createHelpdesk();
      hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
      const seen: TraceEvent[] = [];
      const runner = createRunner({
        clock: hd.clock,
        trace: { sinks: [{ types: new Set([type]), write: (e) => void seen.push(e) }] },
      });
      await runner.run(hd.actions.updateTicket, input, ctx);
      // One tool.selected; two reads (the baseline and the verify) for observe.
      expect(seen.map((e) => e.type)).toEqual(type === 'observe' ? [type, type] : [type]);
      for (const e of seen as { argsHash?: string; query?: { inputHash: string } }[]) {
        expect(type === 'tool.selected' ? e.argsHash : e.query?.inputHash).toBe(hashOf(input));
      }
    }
  });

  it('rejects bad trace options with the field at fault', () => {
    expect(() => createRunner({ trace: {} as never })).toThrow(/trace: expected \{ sinks/);
    expect(() => createRunner({ trace: { sinks: [{} as never] } })).toThrow(/trace\.sinks\[0\]/);
    expect(() =>
      createRunner({ trace: { sinks: [{ write() {} }], redaction: { rules: [{ name: 'x' }] } } }),
    ).toThrow(/trace\.redaction\.rules\[0\]/);
  });
});

describe('the tracer hooks', () => {
  it('a hash the caller already computed is recorded as argsHash instead of hashing the input again', () => {
    const seen: TraceEvent[] = [];
    const tracer = new Tracer(
      { sinks: [{ write: (e) => void seen.push(e) }] },
      { now: () => 0, sleep: async () => {} },
    );
    const input = { id: 'T-1' };
    const given = tracer.begin({ name: 'a', mode: 'committed' }, { runId: 'r', entry: 'run' });
    given.selected(true, input, { target: 't', argsHash: 'f'.repeat(64) });
    const computed = tracer.begin({ name: 'a', mode: 'committed' }, { runId: 'r', entry: 'run' });
    computed.selected(true, input, { target: 't' });
    const hashes = ofType(seen, 'tool.selected').map((e) => e.argsHash);
    expect(hashes).toEqual(['f'.repeat(64), hashOf(input)]);
  });

  it('a field that cannot be read is recorded as unreadable, and building the event does not throw', () => {
    const seen: TraceEvent[] = [];
    const tracer = new Tracer(
      { sinks: [{ write: (e) => void seen.push(e) }] },
      { now: () => 0, sleep: async () => {} },
    );
    const trace = tracer.begin({ name: 'a', mode: 'committed' }, { runId: 'r', entry: 'run' });
    const evidence = {
      get status(): string {
        throw new Error('getter failed');
      },
    };
    const completion = { operationId: 'op_1', status: 'verified', message: 'ok', checks: [], evidence };
    expect(() => trace.completed(completion as unknown as Completion)).not.toThrow();
    expect(ofType(seen, 'completion')[0]!.evidence).toBe('[redacted:unreadable]');
  });
});
