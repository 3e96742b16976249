import { afterEach, describe, expect, it } from 'vitest';
import { createRunner, defineAction } from '../../src/index.js';
import { OTEL_NAMES, otelSink } from '../../src/otel/index.js';
import { schema } from '../../src/testing/schema.js';
import { otelHarness } from './support.js';

let harness: ReturnType<typeof otelHarness>;
afterEach(() => harness?.shutdown());

// A counter store whose writes take a few milliseconds, so calls started together overlap.
function counter(name: string) {
  const counts = new Map<string, number>();
  return defineAction({
    name,
    description: 'Bumps a counter.',
    input: schema({ id: 'string' }),
    target: (input) => `counter:${input.id}`,
    postcondition: 'The counter was bumped.',
    mode: 'committed',
    safeToRepeat: true,
    execute: async (input) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      counts.set(input.id, (counts.get(input.id) ?? 0) + 1);
      return { ok: true };
    },
    observe: (input) => (counts.has(input.id) ? { n: counts.get(input.id)! } : null),
    expect: () => ({ n: 1 }),
  });
}

describe('readback/otel: calls that share a tool call id', () => {
  it('a call re-sent while still in flight gets its own span; none is left open or uncounted', async () => {
    harness = otelHarness();
    const sink = otelSink({ tracer: harness.tracer, meter: harness.meter });
    const runner = createRunner({ trace: { sinks: [sink] } });
    const bump = counter('bump');
    const ctx = { runId: 'run-1', toolCallId: 'call_1' };
    const [first, again] = await Promise.all([
      runner.run(bump, { id: 'a' }, ctx),
      runner.run(bump, { id: 'a' }, ctx),
    ]);
    expect([first.status, again.status]).toEqual(['verified', 'verified']);
    expect(sink.openSpans()).toBe(0);
    const spans = harness.exporter.getFinishedSpans();
    expect(spans.map((s) => s.attributes['gen_ai.tool.call.id'])).toEqual(['call_1', 'call_1']);
    const completions = await harness.points(OTEL_NAMES.completionsMetric);
    expect(completions.map((p) => p.value)).toEqual([2]);
  });

  it('two conversations whose model server numbers calls alike keep their own spans', async () => {
    harness = otelHarness();
    const sink = otelSink({ tracer: harness.tracer, meter: harness.meter });
    const runner = createRunner({ trace: { sinks: [sink] } });
    const [one, two] = [counter('bump_one'), counter('bump_two')];
    await Promise.all([
      runner.run(one, { id: 'a' }, { runId: 'conversation-1', toolCallId: 'call_0' }),
      runner.run(two, { id: 'b' }, { runId: 'conversation-2', toolCallId: 'call_0' }),
    ]);
    expect(sink.openSpans()).toBe(0);
    const spans = harness.exporter.getFinishedSpans();
    const seen = spans.map((s) => [
      s.name,
      s.attributes['readback.run.id'],
      s.attributes['readback.target'],
      s.attributes['readback.status'],
    ]);
    expect(seen.sort()).toEqual([
      ['execute_tool bump_one', 'conversation-1', 'counter:a', 'verified'],
      ['execute_tool bump_two', 'conversation-2', 'counter:b', 'verified'],
    ]);
  });
});
