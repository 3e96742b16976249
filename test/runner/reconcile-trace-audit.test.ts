// A reconciler drive that throws (its store failing mid-drive) must still end the call's record: without a
// `run.error` the trace has a call that never ends, and the OpenTelemetry adapter keeps its span open for good.
import { describe, expect, it } from 'vitest';
import {
  callbackSink,
  createRunner,
  memoryStore,
  type OperationStore,
  type TraceEvent,
} from '../../src/index.js';
import { otelSink } from '../../src/otel/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { otelHarness } from '../otel/support.js';
import { ctx } from './support.js';

const email = { to: 'ana@example.com', subject: 'Your refund', body: 'Done.' };

describe('reconcile: a drive that throws', () => {
  it('ends its call with run.error, and its span is ended with the error', async () => {
    const hd = createHelpdesk();
    const store = memoryStore();
    const agent = createRunner({ store, clock: hd.clock, random: () => 0.5 });
    const pending = await agent.run(hd.actions.sendEmail, email, { ...ctx, wait: false });
    expect(pending.status).toBe('pending');
    hd.clock.advance(5_000);

    // The store answers the claim, then fails every write of the drive (a connection lost mid-drive).
    const failing: OperationStore = {
      ...store,
      transition: async () => {
        throw Object.assign(new Error('connection terminated'), { code: 'ECONNRESET' });
      },
    };
    const events: TraceEvent[] = [];
    const otel = otelHarness();
    const spans = otelSink({ tracer: otel.tracer, meter: otel.meter });
    const reconciler = createRunner({
      store: failing,
      clock: hd.clock,
      random: () => 0.5,
      actions: Object.values(hd.actions),
      trace: { sinks: [callbackSink((e) => void events.push(e)), spans] },
    });
    const report = await reconciler.reconcile({ once: true });
    expect(report.errors).toBe(1);
    expect(report.lastError).toMatch(/connection terminated/);

    const call = events.filter((e) => e.operationId === pending.operationId || e.type === 'run.started');
    expect(call.map((e) => e.type).at(0)).toBe('run.started');
    expect(call.map((e) => e.type).at(-1)).toBe('run.error');
    expect(spans.openSpans()).toBe(0);
    const [span] = otel.exporter.getFinishedSpans();
    expect(span?.name).toBe('execute_tool send_email');
    expect(span?.attributes['error.type']).toBe('ECONNRESET');
    await otel.shutdown();
  });
});
