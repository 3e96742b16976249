import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { DataPointType } from '@opentelemetry/sdk-metrics';
import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
} from '@opentelemetry/semantic-conventions/incubating';
import { afterEach, describe, expect, it } from 'vitest';
import { callbackSink, createRunner, type TraceEvent } from '../../src/index.js';
import { OTEL_NAMES, type OtelSinkOptions, otelSink } from '../../src/otel/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { otelHarness } from './support.js';

const ctx = { runId: 'run-7f2c', scope: { tenant: 'acme' } };
let harness: ReturnType<typeof otelHarness>;
afterEach(() => harness?.shutdown());

function setup(options: Omit<OtelSinkOptions, 'tracer' | 'meter'> = {}, recordArguments = false) {
  harness = otelHarness();
  const hd = createHelpdesk();
  hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
  const sink = otelSink({ tracer: harness.tracer, meter: harness.meter, ...options });
  const events: TraceEvent[] = [];
  const runner = createRunner({
    clock: hd.clock,
    random: () => 0.5,
    trace: { sinks: [sink, callbackSink((e) => void events.push(e))], recordArguments },
  });
  return { hd, runner, sink, events, spans: () => harness.exporter.getFinishedSpans() };
}

describe('readback/otel spans', () => {
  it('one execute_tool span per call, with the GenAI attributes and readback.* outcome', async () => {
    const { hd, runner, sink, spans } = setup();
    const c = await runner.run(
      hd.actions.updateTicket,
      { id: 'T-104', status: 'resolved' },
      { ...ctx, toolCallId: 'call_mszuSIzqtI65', turn: 2 },
    );
    expect(c.status).toBe('verified');
    expect(spans()).toHaveLength(1);
    const span = spans()[0]!;
    expect(span.name).toBe('execute_tool update_ticket');
    expect(span.kind).toBe(SpanKind.INTERNAL);
    expect(span.attributes).toMatchObject({
      [ATTR_GEN_AI_OPERATION_NAME]: GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
      [ATTR_GEN_AI_TOOL_NAME]: 'update_ticket',
      [ATTR_GEN_AI_TOOL_CALL_ID]: 'call_mszuSIzqtI65',
      [ATTR_GEN_AI_TOOL_TYPE]: 'function',
      'readback.status': 'verified',
      'readback.operation.id': c.operationId,
      'readback.mode': 'committed',
      'readback.attempt': 1,
      'readback.claimed': 'success',
      'readback.verified': true,
      'readback.turn': 2,
      'readback.run.id': 'run-7f2c',
    });
    expect(span.attributes).not.toHaveProperty(ATTR_ERROR_TYPE);
    expect(span.attributes).not.toHaveProperty('readback.error.code');
    expect(span.attributes).not.toHaveProperty(ATTR_GEN_AI_TOOL_CALL_ARGUMENTS);
    expect(span.attributes).not.toHaveProperty(ATTR_GEN_AI_TOOL_CALL_RESULT);
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
    expect(span.events.map((e) => [e.name, e.attributes?.['readback.read.phase'] ?? null])).toEqual([
      ['readback.observe', 'baseline'],
      ['readback.execute', null],
      ['readback.observe', 'verify'],
    ]);
    expect(span.events[1]?.attributes).toMatchObject({
      'readback.claimed': 'success',
      'readback.attempt': 1,
    });
    expect(span.events[2]?.attributes).toMatchObject({
      'readback.read.verdict': 'pass',
      'readback.read.at': c.observedAt,
    });
    expect(sink.openSpans()).toBe(0);
  });

  it('a tool that reported success but did not change anything: error.type and the claimed/verified split', async () => {
    const { hd, runner, spans } = setup();
    hd.tickets.faults.softFailNextWrite = true;
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(c.status).toBe('failed');
    const span = spans()[0]!;
    expect(span.attributes).toMatchObject({
      [ATTR_ERROR_TYPE]: 'readback_mismatch',
      'readback.error.code': 'readback_mismatch',
      'readback.status': 'failed',
      'readback.claimed': 'success',
      'readback.verified': false,
    });
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'readback_mismatch' });
  });

  it('accepted work: one readback.poll span event per provider lookup', async () => {
    const { hd, runner, spans } = setup();
    const c = await runner.run(
      hd.actions.sendEmail,
      { to: 'ana@example.com', subject: 'Hi', body: 'x' },
      ctx,
    );
    expect(c.status).toBe('verified');
    const polls = spans()[0]!.events.filter((e) => e.name === 'readback.poll');
    expect(polls.length).toBe(hd.mail.calls.filter((call) => call.method === 'lookup').length);
    expect(polls.at(-1)?.attributes).toMatchObject({ 'readback.read.terminal': 'succeeded' });
    expect(spans()[0]!.attributes).toMatchObject({
      'readback.mode': 'accepted',
      'readback.claimed': 'accepted',
    });
  });

  it('arguments and results are recorded only when opted in, as JSON', async () => {
    const { hd, runner, spans } = setup({ recordArguments: true, recordResults: true }, true);
    await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    const attrs = spans()[0]!.attributes;
    expect(JSON.parse(String(attrs[ATTR_GEN_AI_TOOL_CALL_ARGUMENTS]))).toEqual({
      id: 'T-104',
      status: 'resolved',
    });
    const written = (await hd.tickets.get('T-104'))!;
    expect(JSON.parse(String(attrs[ATTR_GEN_AI_TOOL_CALL_RESULT]))).toEqual({
      ok: true,
      version: written.version,
    });
  });

  it('a call that throws still ends its span, with error.type', async () => {
    const { hd, runner, sink, spans } = setup();
    await runner.store.close();
    await expect(
      runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx),
    ).rejects.toThrow();
    expect(spans()[0]?.attributes[ATTR_ERROR_TYPE]).toBe('store_closed');
    expect(spans()[0]?.status.code).toBe(SpanStatusCode.ERROR);
    expect(sink.openSpans()).toBe(0);
  });
});

describe('readback/otel metrics', () => {
  it('completions by status and action, verification latency, and the reported-vs-verified gap', async () => {
    const { hd, runner, events } = setup();
    hd.tickets.seed([
      { id: 'T-105', tenant: 'acme' },
      { id: 'T-106', tenant: 'acme' },
    ]);
    await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    hd.tickets.faults.softFailNextWrite = true;
    await runner.run(hd.actions.updateTicket, { id: 'T-105', status: 'resolved' }, ctx);
    await runner.run(hd.actions.updateTicket, { id: 'T-106', status: 'nonsense' }, ctx);
    const mail = await runner.run(
      hd.actions.sendEmail,
      { to: 'ana@example.com', subject: 'Hi', body: 'x' },
      ctx,
    );
    expect(mail.status).toBe('verified');

    const completions = await harness.points(OTEL_NAMES.completionsMetric);
    const count = (tool: string, status: string) =>
      completions.find(
        (p) => p.attributes[ATTR_GEN_AI_TOOL_NAME] === tool && p.attributes['readback.status'] === status,
      )?.value;
    expect(count('update_ticket', 'verified')).toBe(1);
    expect(count('update_ticket', 'failed')).toBe(2);
    expect(count('send_email', 'verified')).toBe(1);

    // Two ticket writes claimed success; readback verified one of them. The mail was only "accepted".
    const reported = await harness.points(OTEL_NAMES.reportedSuccessMetric);
    expect(
      reported
        .map((p) => [p.attributes[ATTR_GEN_AI_TOOL_NAME], p.attributes['readback.verified'], p.value])
        .sort(),
    ).toEqual([
      ['update_ticket', false, 1],
      ['update_ticket', true, 1],
    ]);

    // The fake clock makes latency exact: for the committed calls no time passes; the mail polls for a while.
    const latency = await harness.points(OTEL_NAMES.verificationDurationMetric);
    const mailLatency = latency.find((p) => p.attributes[ATTR_GEN_AI_TOOL_NAME] === 'send_email')?.value as {
      count: number;
      sum: number;
    };
    expect(mailLatency.count).toBe(1);
    const mailDone = events.find((e) => e.type === 'completion' && e.action === 'send_email');
    const mailMs = mailDone?.type === 'completion' ? mailDone.verificationMs : undefined;
    expect(mailMs).toBeGreaterThan(1000);
    expect(mailLatency.sum).toBeCloseTo(mailMs! / 1000, 6);
    const ticketLatency = latency
      .filter((p) => p.attributes[ATTR_GEN_AI_TOOL_NAME] === 'update_ticket')
      .reduce((n, p) => n + (p.value as { count: number }).count, 0);
    expect(ticketLatency).toBe(2); // the invalid call never executed, so it has no verification latency
  });
});

describe('readback/otel metrics shared by sinks', () => {
  it('two runners with their own sinks on one meter add up, and the counts keep adding across collections', async () => {
    harness = otelHarness();
    const hd = createHelpdesk();
    hd.tickets.seed([
      { id: 'T-201', tenant: 'acme' },
      { id: 'T-202', tenant: 'acme' },
      { id: 'T-203', tenant: 'acme' },
    ]);
    const runnerWith = () =>
      createRunner({
        clock: hd.clock,
        random: () => 0.5,
        trace: { sinks: [otelSink({ tracer: harness.tracer, meter: harness.meter })] },
      });
    const first = runnerWith();
    const second = runnerWith();
    await first.run(hd.actions.updateTicket, { id: 'T-201', status: 'resolved' }, ctx);
    await second.run(hd.actions.updateTicket, { id: 'T-202', status: 'resolved' }, ctx);
    const verified = async (name: string) =>
      (await harness.points(name)).filter(
        (p) =>
          p.attributes[ATTR_GEN_AI_TOOL_NAME] === 'update_ticket' &&
          p.attributes['readback.status'] === 'verified',
      );
    expect((await verified(OTEL_NAMES.completionsMetric)).map((p) => p.value)).toEqual([2]);
    expect((await verified(OTEL_NAMES.reportedSuccessMetric)).map((p) => p.value)).toEqual([2]);

    await second.run(hd.actions.updateTicket, { id: 'T-203', status: 'resolved' }, ctx);
    expect((await verified(OTEL_NAMES.completionsMetric)).map((p) => p.value)).toEqual([3]);
    const metric = (await harness.allMetrics()).scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === OTEL_NAMES.completionsMetric);
    // Still a counter to its readers: a monotonic sum.
    expect(metric?.dataPointType).toBe(DataPointType.SUM);
    expect(metric && 'isMonotonic' in metric ? metric.isMonotonic : undefined).toBe(true);
  });
});

describe('readback/otel options', () => {
  // A wrong tracer used to fail only in the first run (as a sink warning), a wrong meter with a TypeError,
  // and a wrong flag or tool type was used as given.
  it.each([
    [{ tracer: {} }, 'otelSink(options).tracer'],
    [{ meter: { createHistogram: () => undefined } }, 'otelSink(options).meter'],
    [{ toolType: 5 }, 'otelSink(options).toolType'],
    [{ toolType: '' }, 'otelSink(options).toolType'],
    [{ recordArguments: 'yes' }, 'otelSink(options).recordArguments'],
    [{ recordResults: 1 }, 'otelSink(options).recordResults'],
  ])('otelSink(%o) is refused, naming %s', (options, field) => {
    expect(() => otelSink(options as never)).toThrow(
      expect.objectContaining({ code: 'invalid_options', field }),
    );
  });
});
