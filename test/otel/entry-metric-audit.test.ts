// A poll (or reconcile) completes a call too: the agent's call of an accepted action counts `pending`, the poll
// that settles it `verified`. Without the entry on the metric a dashboard adds both to one total and cannot tell
// the agent's outcomes from the follow-ups that resolved them.
import { describe, expect, it } from 'vitest';
import { createRunner } from '../../src/index.js';
import { OTEL_NAMES, otelSink } from '../../src/otel/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { otelHarness } from './support.js';

describe('readback.completions by entry', () => {
  it('counts the agent call and the poll that settled it apart, each under its entry', async () => {
    const harness = otelHarness();
    const hd = createHelpdesk();
    const runner = createRunner({
      clock: hd.clock,
      random: () => 0.5,
      trace: { sinks: [otelSink({ tracer: harness.tracer, meter: harness.meter })] },
    });
    const ctx = { runId: 'run-1', scope: { tenant: 'acme' } };
    const email = { to: 'ana@example.com', subject: 'Hi', body: 'x' };
    const first = await runner.run(hd.actions.sendEmail, email, { ...ctx, wait: false });
    expect(first.status).toBe('pending');
    hd.clock.advance(60_000);
    expect((await runner.poll(first.operationId)).status).toBe('verified');

    const points = (await harness.points(OTEL_NAMES.completionsMetric)).map((p) => [
      p.attributes['readback.entry'],
      p.attributes['readback.status'],
      p.value,
    ]);
    expect(points.sort()).toEqual([
      ['poll', 'verified', 1],
      ['run', 'pending', 1],
    ]);
    await harness.shutdown();
  });
});
