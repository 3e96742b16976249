import { metrics, trace } from '@opentelemetry/api';
import { AlwaysOffSampler, BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import {
  callbackSink,
  createRunner,
  memoryStore,
  type TraceEvent,
  type TraceEventType,
  type TraceSink,
} from '../../src/index.js';
import { OTEL_NAMES, otelSink } from '../../src/otel/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { COMMITTED_UPDATE_EVENTS } from '../trace/support.js';
import { otelHarness } from './support.js';

// A call whose span does not record (no SDK, or sampled out) has little or nothing to give the OTel sink: the
// runner then builds only what the sink still uses (the end, for metrics), or nothing, for that call.
const ctx = { runId: 'run-nr', scope: { tenant: 'acme' } };
let harness: ReturnType<typeof otelHarness> | undefined;
afterEach(async () => {
  await harness?.shutdown();
  harness = undefined;
});

/** Counts the event types a sink was handed, by wrapping its `write`. */
function counting<S extends TraceSink>(sink: S): { sink: S; seen: TraceEventType[] } {
  const seen: TraceEventType[] = [];
  const write = sink.write.bind(sink);
  sink.write = (event: TraceEvent) => {
    seen.push(event.type);
    return write(event);
  };
  return { sink, seen };
}

function helpdesk() {
  const hd = createHelpdesk();
  hd.tickets.seed([{ id: 'T-1', tenant: 'acme' }]);
  return hd;
}

describe('otelSink on calls it has nothing to record for', () => {
  it('with the API alone (no SDK registered) the sink takes run.started only and follows no call', async () => {
    // No provider is registered in this file: the global tracer and meter are the API's no-ops.
    expect(metrics.getMeterProvider().getMeter('x')).toBe(metrics.getMeter('y'));
    const { sink, seen } = counting(otelSink());
    const hd = helpdesk();
    const runner = createRunner({ clock: hd.clock, store: memoryStore(), trace: { sinks: [sink] } });
    const done = await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, ctx);

    expect(done.status).toBe('verified');
    expect((await hd.tickets.get('T-1'))?.status).toBe('resolved');
    expect(seen).toEqual(['run.started']);
    expect(sink.openSpans()).toBe(0);
  });

  it('another sink on the same runner still gets every event of the call', async () => {
    const { sink, seen } = counting(otelSink());
    const all: TraceEventType[] = [];
    const hd = helpdesk();
    const runner = createRunner({
      clock: hd.clock,
      trace: { sinks: [sink, callbackSink((e) => void all.push(e.type))] },
    });
    await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, ctx);

    expect(seen).toEqual(['run.started']);
    expect(all).toEqual(COMMITTED_UPDATE_EVENTS);
  });

  it('a sampled-out span with live metrics: only the end reaches the sink, and the call is still counted', async () => {
    harness = otelHarness();
    const tracer = new BasicTracerProvider({ sampler: new AlwaysOffSampler() }).getTracer('off');
    const { sink, seen } = counting(otelSink({ tracer, meter: harness.meter }));
    const hd = helpdesk();
    const runner = createRunner({ clock: hd.clock, trace: { sinks: [sink] } });
    await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, ctx);
    await runner.run(hd.actions.updateTicket, { id: 'T-404', status: 'resolved' }, ctx);

    expect(seen).toEqual(['run.started', 'completion', 'run.started', 'completion']);
    expect(sink.openSpans()).toBe(0);
    const completions = await harness.points(OTEL_NAMES.completionsMetric);
    const byStatus = Object.fromEntries(completions.map((p) => [p.attributes['readback.status'], p.value]));
    expect(byStatus).toEqual({ verified: 1, failed: 1 });
    const durations = await harness.points(OTEL_NAMES.toolDurationMetric);
    expect(durations.reduce((n, p) => n + (p.value as { count: number }).count, 0)).toBe(2);
    expect(harness.exporter.getFinishedSpans()).toEqual([]);
  });

  it('a recording span still gets every event the sink uses', async () => {
    harness = otelHarness();
    const { sink, seen } = counting(otelSink({ tracer: harness.tracer, meter: harness.meter }));
    const hd = helpdesk();
    const runner = createRunner({ clock: hd.clock, trace: { sinks: [sink] } });
    await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, ctx);

    expect(seen).toEqual([
      'run.started',
      'tool.selected',
      'permission.decided',
      'operation.reserved',
      'observe',
      'execute.finished',
      'observe',
      'completion',
    ]);
    const [span] = harness.exporter.getFinishedSpans();
    expect(span?.attributes['readback.status']).toBe('verified');
    expect(span?.events.map((e) => e.name)).toEqual([
      'readback.observe',
      'readback.execute',
      'readback.observe',
    ]);
  });

  it('the global tracer is followed per call: a provider registered later makes the next calls record', async () => {
    harness = otelHarness();
    const { sink, seen } = counting(otelSink({ meter: harness.meter }));
    const hd = helpdesk();
    const runner = createRunner({ clock: hd.clock, trace: { sinks: [sink] } });
    await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, ctx);
    expect(seen).toEqual(['run.started', 'completion']);

    const provider = new BasicTracerProvider({ spanProcessors: [] });
    trace.setGlobalTracerProvider(provider);
    try {
      seen.length = 0;
      await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'closed' }, ctx);
      expect(seen).toContain('execute.finished');
      expect(seen.at(-1)).toBe('completion');
    } finally {
      trace.disable();
    }
  });
});

describe('a call no sink follows', () => {
  it('completes as on an untraced runner: verified, failed, and a shadow call with its live result', async () => {
    const outcomes = async (traced: boolean) => {
      const hd = helpdesk();
      let n = 0;
      const options = {
        clock: hd.clock,
        newId: () => `op_${++n}`,
        ...(traced ? { trace: { sinks: [otelSink()] } } : {}),
      };
      const runner = createRunner(options);
      const ok = await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, ctx);
      const missing = await runner.run(hd.actions.updateTicket, { id: 'T-404', status: 'resolved' }, ctx);
      const live = createRunner({ ...options, shadow: true });
      const shadowed = await live.shadow(hd.actions.updateTicket, { id: 'T-1', status: 'closed' }, ctx);
      return { ok, missing, shadowed, ticket: await hd.tickets.get('T-1') };
    };
    const plain = await outcomes(false);
    const traced = await outcomes(true);

    expect(traced.ok.status).toBe('verified');
    expect(traced.missing.status).toBe('failed');
    expect(traced.ticket?.status).toBe('closed');
    expect(traced).toEqual(plain);
  });
});

describe('typesAfterStart, the per-call narrowing any sink may use', () => {
  it('a sink that throws from it keeps its usual types for that call, and the error is reported', async () => {
    const errors: unknown[] = [];
    const seen: TraceEventType[] = [];
    const sink: TraceSink = {
      write: (e) => void seen.push(e.type),
      types: new Set<TraceEventType>(['run.started', 'completion']),
      typesAfterStart: () => {
        throw new Error('cannot say');
      },
    };
    const hd = helpdesk();
    const runner = createRunner({
      clock: hd.clock,
      trace: { sinks: [sink], onSinkError: (error) => void errors.push(error) },
    });
    const done = await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, ctx);

    expect(done.status).toBe('verified');
    expect(seen).toEqual(['run.started', 'completion']);
    expect(String(errors[0])).toContain('cannot say');
  });

  it('the answer applies to that call alone', async () => {
    let calls = 0;
    const seen: string[] = [];
    const sink: TraceSink = {
      write: (e) => void seen.push(`${e.runId}:${e.type}`),
      // The first call: nothing more; the second: its completion only.
      typesAfterStart: () =>
        ++calls === 1 ? new Set<TraceEventType>() : new Set<TraceEventType>(['completion']),
    };
    const hd = helpdesk();
    const runner = createRunner({ clock: hd.clock, trace: { sinks: [sink] } });
    await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'resolved' }, { ...ctx, runId: 'a' });
    await runner.run(hd.actions.updateTicket, { id: 'T-1', status: 'closed' }, { ...ctx, runId: 'b' });

    expect(seen).toEqual(['a:run.started', 'b:run.started', 'b:completion']);
  });
});
