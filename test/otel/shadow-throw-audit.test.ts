import { SpanStatusCode } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { createRunner, defineAction } from '../../src/index.js';
import { OTEL_NAMES, otelSink } from '../../src/otel/index.js';
import { schema } from '../../src/testing/schema.js';
import { otelHarness } from './support.js';

let harness: ReturnType<typeof otelHarness>;
afterEach(() => harness?.shutdown());

// A live tool that throws before writing anything.
function failingTool(name: string) {
  return defineAction({
    name,
    description: 'Sends a fax; the line is down.',
    input: schema({ id: 'string' }),
    target: (input) => `fax:${input.id}`,
    postcondition: 'The fax is in the outbox.',
    mode: 'committed',
    safeToRepeat: false,
    execute: () => {
      throw new TypeError('fax line down');
    },
    observe: () => null,
    expect: () => ({ sent: true }),
  });
}

describe('readback/otel: a shadow call whose live tool throws', () => {
  it('ends its span as an error, since runner.shadow re-throws to the caller', async () => {
    harness = otelHarness();
    const sink = otelSink({ tracer: harness.tracer, meter: harness.meter });
    const runner = createRunner({ shadow: true, trace: { sinks: [sink] } });
    await expect(runner.shadow(failingTool('send_fax'), { id: '1' }, { runId: 'r' })).rejects.toThrow(
      'fax line down',
    );
    const [span] = harness.exporter.getFinishedSpans();
    expect(span?.attributes).toMatchObject({
      'readback.status': 'unknown',
      'readback.shadow': true,
      'readback.claimed': 'error',
      'error.type': '_OTHER',
    });
    expect(span?.status.code).toBe(SpanStatusCode.ERROR);
    const durations = await harness.points(OTEL_NAMES.toolDurationMetric);
    expect(durations.map((p) => p.attributes['error.type'])).toEqual(['_OTHER']);
    expect(sink.openSpans()).toBe(0);
  });

  it('while a normal run, where readback handles the same exception, is no error', async () => {
    harness = otelHarness();
    const runner = createRunner({
      trace: { sinks: [otelSink({ tracer: harness.tracer, meter: harness.meter })] },
    });
    const c = await runner.run(failingTool('send_fax'), { id: '1' }, { runId: 'r' });
    expect(c.status).toBe('unknown');
    const [span] = harness.exporter.getFinishedSpans();
    expect(span?.status.code).toBe(SpanStatusCode.UNSET);
    expect(span?.attributes).not.toHaveProperty('error.type');
  });
});
