import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { DataPointType } from '@opentelemetry/sdk-metrics';
import { ATTR_ERROR_TYPE } from '@opentelemetry/semantic-conventions';
import {
  ATTR_GEN_AI_OPERATION_NAME,
  ATTR_GEN_AI_TOOL_CALL_ARGUMENTS,
  ATTR_GEN_AI_TOOL_CALL_ID,
  ATTR_GEN_AI_TOOL_CALL_RESULT,
  ATTR_GEN_AI_TOOL_DESCRIPTION,
  ATTR_GEN_AI_TOOL_NAME,
  ATTR_GEN_AI_TOOL_TYPE,
  GEN_AI_OPERATION_NAME_VALUE_EXECUTE_TOOL,
} from '@opentelemetry/semantic-conventions/incubating';
import { afterEach, describe, expect, it } from 'vitest';
import { callbackSink, createRunner, defineAction, type TraceEvent } from '../../src/index.js';
import { OTEL_NAMES, type OtelSinkOptions, otelSink } from '../../src/otel/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { otelHarness } from './support.js';

const ctx = { runId: 'run-7f2c', scope: { tenant: 'acme' } };
let harness: ReturnType<typeof otelHarness>;
// Only its actions' names and descriptions are read (for the `actions` option).
const hd0 = createHelpdesk();
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
    // A call without the model's tool call id reports none, rather than the id readback generated for it.
    await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(spans()).toHaveLength(2);
    expect(spans()[1]!.attributes).not.toHaveProperty(ATTR_GEN_AI_TOOL_CALL_ID);
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
    // Error status without a description: it would only repeat error.type ("Recording errors" advises against it).
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR });
  });

  it('a pending call is not an error: status unset, no error.type, readback.status says pending', async () => {
    const { hd, runner, spans } = setup();
    const pending = await runner.run(
      hd.actions.sendEmail,
      { to: 'ana@example.com', subject: 'Hi', body: 'x' },
      { ...ctx, wait: false },
    );
    expect(pending.status).toBe('pending');
    const span = spans()[0]!;
    expect(span.attributes['readback.status']).toBe('pending');
    expect(span.attributes).not.toHaveProperty(ATTR_ERROR_TYPE);
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
    const durations = await harness.points(OTEL_NAMES.toolDurationMetric);
    expect(durations.map((p) => p.attributes)).toEqual([
      { [ATTR_GEN_AI_TOOL_NAME]: 'send_email', [ATTR_GEN_AI_TOOL_TYPE]: 'function' },
    ]);
  });

  it('gen_ai.tool.description comes from the actions passed in, and only then', async () => {
    const { hd, runner, spans } = setup({ actions: [hd0.actions.updateTicket] });
    await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    await runner.run(hd.actions.sendEmail, { to: 'ana@example.com', subject: 'Hi', body: 'x' }, ctx);
    const [ticket, mail] = spans();
    expect(ticket?.attributes[ATTR_GEN_AI_TOOL_DESCRIPTION]).toBe('Set the status of a helpdesk ticket.');
    expect(mail?.name).toBe('execute_tool send_email');
    expect(mail?.attributes).not.toHaveProperty(ATTR_GEN_AI_TOOL_DESCRIPTION);
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

  it('a call that throws still ends its span, with error.type and the exception message as description', async () => {
    const { hd, runner, sink, spans, events } = setup();
    await runner.store.close();
    await expect(
      runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx),
    ).rejects.toThrow();
    expect(spans()[0]?.attributes[ATTR_ERROR_TYPE]).toBe('store_closed');
    const thrown = events.find((e) => e.type === 'run.error');
    const message = thrown?.type === 'run.error' ? thrown.error.message : undefined;
    expect(message).toMatch(/\w/);
    expect(message).not.toBe('store_closed');
    expect(spans()[0]?.status).toEqual({ code: SpanStatusCode.ERROR, message });
    expect(sink.openSpans()).toBe(0);
    const durations = await harness.points(OTEL_NAMES.toolDurationMetric);
    expect(durations.map((p) => p.attributes[ATTR_ERROR_TYPE])).toEqual(['store_closed']);
  });

  it('arguments and results are always JSON text: JSON strings are read as JSON, other strings encoded', async () => {
    harness = otelHarness();
    const sink = otelSink({
      tracer: harness.tracer,
      meter: harness.meter,
      recordArguments: true,
      recordResults: true,
    });
    const runner = createRunner({ trace: { sinks: [sink], recordArguments: true } });
    const notes = new Map<string, string>();
    const addNote = defineAction({
      name: 'add_note',
      description: 'Adds a note; the tool answers in plain text',
      input: { '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => ({ value }) } },
      target: (input: string) => `note:${input}`,
      postcondition: 'The note exists.',
      execute: (input: string) => {
        notes.set(input, input);
        return 'note saved';
      },
      observe: (input: string) => (notes.has(input) ? { text: notes.get(input) } : null),
      expect: (input: string) => ({ text: input }),
    });
    const c = await runner.run(addNote, 'call the supplier', { runId: 'r' });
    expect(c.status).toBe('verified');
    const attrs = harness.exporter.getFinishedSpans()[0]!.attributes;
    expect(JSON.parse(String(attrs[ATTR_GEN_AI_TOOL_CALL_ARGUMENTS]))).toBe('call the supplier');
    expect(JSON.parse(String(attrs[ATTR_GEN_AI_TOOL_CALL_RESULT]))).toBe('note saved');
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

describe('readback/otel gen_ai.execute_tool.duration', () => {
  it('one point per call, in seconds with the advised buckets, error.type as on the span, the span duration', async () => {
    const { hd, runner, spans } = setup({ toolType: 'extension' });
    hd.tickets.seed([{ id: 'T-105', tenant: 'acme' }]);
    await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    hd.tickets.faults.softFailNextWrite = true;
    await runner.run(hd.actions.updateTicket, { id: 'T-105', status: 'resolved' }, ctx);

    const metric = (await harness.allMetrics()).scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === 'gen_ai.execute_tool.duration');
    expect(metric?.descriptor.unit).toBe('s');
    expect(metric?.dataPointType).toBe(DataPointType.HISTOGRAM);
    type Point = { count: number; sum: number; buckets: { boundaries: number[] } };
    const points = (metric?.dataPoints ?? []).map((p) => ({
      attributes: { ...p.attributes },
      value: p.value as Point,
    }));
    expect(points.map((p) => p.attributes)).toEqual([
      { [ATTR_GEN_AI_TOOL_NAME]: 'update_ticket', [ATTR_GEN_AI_TOOL_TYPE]: 'extension' },
      {
        [ATTR_GEN_AI_TOOL_NAME]: 'update_ticket',
        [ATTR_GEN_AI_TOOL_TYPE]: 'extension',
        [ATTR_ERROR_TYPE]: 'readback_mismatch',
      },
    ]);
    expect(points[0]?.value.buckets.boundaries).toEqual([
      0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    ]);
    const [ok, failed] = spans();
    expect(failed?.attributes[ATTR_ERROR_TYPE]).toBe('readback_mismatch');
    // The value is the span's duration (the conventions: "SHOULD be the same as the span duration").
    const seconds = (d: [number, number] | undefined) => (d ? d[0] + d[1] / 1e9 : Number.NaN);
    expect(points[0]?.value.count).toBe(1);
    expect(points[0]?.value.sum).toBeGreaterThan(0);
    expect(points[0]?.value.sum).toBeCloseTo(seconds(ok?.duration), 6);
    expect(points[1]?.value.sum).toBeCloseTo(seconds(failed?.duration), 6);
  });

  it('metric names, instruments and units follow the naming guidelines', async () => {
    const { hd, runner } = setup();
    await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    const metrics = (await harness.allMetrics()).scopeMetrics.flatMap((s) => s.metrics);
    expect(
      metrics.map((m) => [m.descriptor.name, DataPointType[m.dataPointType], m.descriptor.unit]).sort(),
    ).toEqual([
      ['gen_ai.execute_tool.duration', 'HISTOGRAM', 's'],
      ['readback.completions', 'SUM', '{call}'],
      // A counter of countable things is named in the plural.
      ['readback.reported_successes', 'SUM', '{call}'],
      ['readback.verification.duration', 'HISTOGRAM', 's'],
    ]);
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
    [{ actions: {} }, 'otelSink(options).actions'],
    [{ actions: [{ name: 'x' }] }, 'otelSink(options).actions'],
  ])('otelSink(%o) is refused, naming %s', (options, field) => {
    expect(() => otelSink(options as never)).toThrow(
      expect.objectContaining({ code: 'invalid_options', field }),
    );
  });
});
