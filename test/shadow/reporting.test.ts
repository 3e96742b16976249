import { afterEach, describe, expect, it } from 'vitest';
import { completionText } from '../../src/integrations/text.js';
import { guardAnswer } from '../../src/messages/guard.js';
import { summarize } from '../../src/messages/summarize.js';
import { OTEL_NAMES, otelSink } from '../../src/otel/index.js';
import type { TraceEvent } from '../../src/trace/events.js';
import { callbackSink } from '../../src/trace/sinks.js';
import { otelHarness } from '../otel/support.js';
import { ctx, setup } from './support.js';

const resolveT104 = { id: 'T-104', status: 'resolved' } as const;

describe('shadow completions are never proof', () => {
  it('the guard refuses a claim backed only by a shadow completion, though the write really landed', async () => {
    const { hd, runner } = setup({ shadow: true });
    const { completion } = await runner.shadow(hd.actions.updateTicket, resolveT104, ctx);
    expect(completion.status).toBe('verified');
    expect((await hd.tickets.get('T-104'))?.status).toBe('resolved');

    const verdict = guardAnswer('I resolved T-104.', [completion]);
    expect(verdict.ok).toBe(false);
    expect(verdict.violations).toHaveLength(1);
    expect(verdict.violations[0]).toMatchObject({
      kind: 'unverified_claim',
      operationId: completion.operationId,
    });
    expect(verdict.violations[0]!.detail).toMatch(/only evidence is a shadow observation/);
    // A generic "all done" cannot lean on it either.
    expect(guardAnswer('All done.', [completion]).ok).toBe(false);

    // The same claim against a normal verified completion of the same write passes.
    const live = setup();
    const proof = await live.runner.run(live.hd.actions.updateTicket, resolveT104, ctx);
    expect(guardAnswer('I resolved T-104.', [proof]).ok).toBe(true);
  });

  it('summarize leaves shadow completions out and says so', async () => {
    const { hd, runner } = setup({ shadow: true });
    const { completion } = await runner.shadow(hd.actions.updateTicket, resolveT104, ctx);
    const text = summarize([completion]);
    expect(text).toBe(
      'No outcome can be reported: 1 shadow observation was left out: shadow mode is never proof.',
    );
    expect(text).not.toContain(completion.message);

    const live = setup();
    const proof = await live.runner.run(live.hd.actions.refundOrder, { orderId: 'A-1', amountCents: 5 }, ctx);
    const mixed = summarize([completion, proof]).split('\n');
    expect(mixed[0]).toBe('1 of 1 action verified.');
    expect(mixed.at(-1)).toBe('1 shadow observation was left out: shadow mode is never proof.');
  });

  it('completionText labels a shadow completion before anything else', async () => {
    const { hd, runner } = setup({ shadow: true });
    hd.tickets.faults.softFailNextWrite = true;
    const { completion } = await runner.shadow(hd.actions.updateTicket, resolveT104, ctx);
    expect(completionText(completion)).toMatch(/^\[shadow observation, not proof, status: failed, /);
  });
});

describe('shadow in the run record and OpenTelemetry', () => {
  let harness: ReturnType<typeof otelHarness> | undefined;
  afterEach(() => harness?.shutdown());

  it('the completion event carries the verdict; the span and reported-success metric carry readback.shadow', async () => {
    harness = otelHarness();
    const events: TraceEvent[] = [];
    const sink = otelSink({ tracer: harness.tracer, meter: harness.meter });
    const { hd, runner } = setup({
      shadow: true,
      trace: { sinks: [sink, callbackSink((e) => void events.push(e))] },
    });
    hd.tickets.faults.softFailNextWrite = true;
    const out = await runner.shadow(hd.actions.updateTicket, resolveT104, ctx);

    const completion = events.find((e) => e.type === 'completion');
    expect(completion).toMatchObject({
      claimed: 'success',
      verified: false,
      status: 'failed',
      message: out.completion.message,
      shadow: { claimed: 'success', status: 'failed', agrees: false },
    });
    const [span] = harness.exporter.getFinishedSpans();
    expect(span?.attributes['readback.shadow']).toBe(true);
    expect(span?.attributes[OTEL_NAMES.claimed]).toBe('success');
    const points = await harness.points(OTEL_NAMES.reportedSuccessMetric);
    expect(points).toEqual([
      {
        attributes: expect.objectContaining({ [OTEL_NAMES.verified]: false, 'readback.shadow': true }),
        value: 1,
      },
    ]);
  });

  it('a normal run has no shadow field and is not marked readback.shadow', async () => {
    harness = otelHarness();
    const events: TraceEvent[] = [];
    const sink = otelSink({ tracer: harness.tracer, meter: harness.meter });
    const { hd, runner } = setup({ trace: { sinks: [sink, callbackSink((e) => void events.push(e))] } });
    await runner.run(hd.actions.updateTicket, resolveT104, ctx);
    expect(events.find((e) => e.type === 'completion')).not.toHaveProperty('shadow');
    // Absent or false: either way a normal call is never counted as a shadow observation.
    expect(harness.exporter.getFinishedSpans()[0]?.attributes['readback.shadow'] ?? false).toBe(false);
  });
});
