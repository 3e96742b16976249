// An accepted-mode export job on an injected clock, for tests of poll pacing: the provider finishes it
// `doneAfterMs` after it was queued.
import type { Clock } from '../../src/clock.js';
import { accepted, defineAction } from '../../src/index.js';
import { anyInput } from './any-input.js';

/** Backoff with no jitter: the runner's own schedule reads at +1 s, +3 s and +7 s (four reads at most). */
export const EXPORT_POLL = {
  maxDurationMs: 60_000,
  maxReads: 4,
  initialDelayMs: 1_000,
  maxDelayMs: 8_000,
  jitter: 0,
};

/** The `export_report` action; each read's time since queueing is pushed to `reads` when given. */
export function exportJobAction(clock: Clock, doneAfterMs: number, reads?: number[]) {
  let queuedAt = 0;
  return defineAction({
    name: 'export_report',
    description: 'Queues a report export.',
    postcondition: 'The export is finished.',
    mode: 'accepted',
    input: anyInput as never,
    target: () => 'report:1',
    execute: async () => {
      queuedAt = clock.now();
      return accepted('job-1');
    },
    observe: async () => {
      reads?.push(clock.now() - queuedAt);
      return { state: clock.now() - queuedAt >= doneAfterMs ? 'done' : 'running' };
    },
    terminal: (o: { state: string }) => (o.state === 'done' ? 'succeeded' : 'running'),
    expect: () => ({ state: 'done' }),
    poll: EXPORT_POLL,
  });
}
