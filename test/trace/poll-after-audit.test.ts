import { describe, expect, it } from 'vitest';
import { callbackSink, createRunner, memoryStore, type TraceEvent } from '../../src/index.js';
import { parseReadbackTrace } from '../../src/review/readback-trace.js';
import { FakeClock } from '../../src/testing/index.js';
import { exportJobAction } from '../support/export-job.js';
import { ofType } from './support.js';

/** An export job the provider finishes 3 s after it was queued, traced to a callback sink on a fake clock. */
function tracedExport() {
  const clock = new FakeClock();
  const store = memoryStore();
  const events: TraceEvent[] = [];
  const action = exportJobAction(clock, 3_000);
  const runner = createRunner({
    store,
    clock,
    random: () => 0,
    actions: [action],
    trace: { sinks: [callbackSink((e) => void events.push(e))] },
  });
  return { clock, store, events, action, runner };
}

describe('the completion trace event carries pollAfter (audit)', () => {
  it('equals the completion’s on every pending completion, early polls included, and is absent once settled', async () => {
    const s = tracedExport();
    const first = await s.runner.run(s.action, {}, { runId: 'r', wait: false });
    expect(first.pollAfter).toBe(new Date(s.clock.now() + 1_000).toISOString());

    s.clock.advance(400);
    const early = await s.runner.poll(first.operationId);
    s.clock.advance(600);
    const due = await s.runner.poll(first.operationId);
    const done = await s.runner.poll(first.operationId, { wait: true });

    expect([early.status, due.status, done.status]).toEqual(['pending', 'pending', 'verified']);
    expect(due.pollAfter).not.toBe(first.pollAfter);
    const completions = ofType(s.events, 'completion');
    expect(completions.map((e) => e.pollAfter)).toEqual([
      first.pollAfter,
      first.pollAfter,
      due.pollAfter,
      undefined,
    ]);
    expect(completions.map((e) => e.pollAfter)).toEqual([first, early, due, done].map((c) => c.pollAfter));
    // Present as a key only when set, and next to the runner's other fields: the JSON a sink writes.
    expect('pollAfter' in (completions[3] ?? {})).toBe(false);
    expect(completions[0]).toMatchObject({ nextAllowedAction: 'poll', status: 'pending' });
  });

  it('a trace with the field still reads in review: every call, its final status, no input issue', async () => {
    const s = tracedExport();
    const first = await s.runner.run(s.action, {}, { runId: 'r', wait: false });
    await s.runner.poll(first.operationId, { wait: true });
    expect(ofType(s.events, 'completion').some((e) => e.pollAfter !== undefined)).toBe(true);

    const jsonl = s.events.map((e) => JSON.stringify(e)).join('\n');
    const read = parseReadbackTrace(`${jsonl}\n`, 'runs.jsonl');
    if (!read.ok) throw new Error(JSON.stringify(read.issues));
    expect(read.value.calls).toHaveLength(1);
    expect(read.value.calls[0]?.readback).toMatchObject({
      status: 'verified',
      operationId: first.operationId,
    });
  });
});
