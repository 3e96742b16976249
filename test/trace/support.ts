import { createHash } from 'node:crypto';
import { canonicalJson, createRunner, type RunnerOptions, type TraceEvent } from '../../src/index.js';
import { createHelpdesk, type HelpdeskOptions } from '../../src/testing/index.js';

/** A helpdesk on a fake clock and a runner that sends its trace to an in-memory list. */
export function tracedSetup(
  options: { helpdesk?: HelpdeskOptions; trace?: Omit<NonNullable<RunnerOptions['trace']>, 'sinks'> } = {},
) {
  const hd = createHelpdesk(options.helpdesk);
  const events: TraceEvent[] = [];
  const runner = createRunner({
    clock: hd.clock,
    random: () => 0.5,
    trace: { ...options.trace, sinks: [{ write: (e) => void events.push(e) }] },
  });
  hd.tickets.seed([
    { id: 'T-104', tenant: 'acme' },
    { id: 'T-105', tenant: 'acme', status: 'resolved' },
    { id: 'T-900', tenant: 'globex' },
  ]);
  return { hd, runner, events };
}

/** The run context most cases use. */
export const ctx = { runId: 'run-7f2c', scope: { tenant: 'acme' } };

/** SHA-256 hex of canonical JSON, computed here independently of the runner's hashing code. */
export function sha256OfCanonical(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

/** The events of one type, narrowed. */
export function ofType<T extends TraceEvent['type']>(
  events: TraceEvent[],
  type: T,
): Extract<TraceEvent, { type: T }>[] {
  return events.filter((e): e is Extract<TraceEvent, { type: T }> => e.type === type);
}

/** Every event a committed helpdesk ticket update with a baseline read emits, in order. */
export const COMMITTED_UPDATE_EVENTS = [
  'run.started',
  'tool.selected',
  'permission.decided',
  'operation.reserved',
  'state.transition',
  'observe',
  'state.transition',
  'execute.started',
  'execute.finished',
  'observe',
  'state.transition',
  'completion',
] as const;
