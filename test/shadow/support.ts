import { defineAction } from '../../src/contract/define.js';
import type { Action, RunContext } from '../../src/contract/types.js';
import { createRunner, type RunnerOptions } from '../../src/runner/runner.js';
import { createHelpdesk } from '../../src/testing/helpdesk.js';

/** The same contract as `action`, with shadow mode switched on for it alone. */
export function shadowOf<I, O>(action: Action<I, O>): Action<I, O> {
  return defineAction({ ...action, shadow: true });
}

/** A helpdesk, its tickets seeded, and a runner on its clock (runner options as given). */
export function setup(options: Omit<RunnerOptions, 'clock'> = {}) {
  const hd = createHelpdesk();
  hd.tickets.seed([
    { id: 'T-104', tenant: 'acme' },
    { id: 'T-105', tenant: 'acme', status: 'resolved' },
  ]);
  const runner = createRunner({ clock: hd.clock, random: () => 0.5, ...options });
  return { hd, runner };
}

/** The run context most cases use. */
export const ctx: RunContext = { runId: 'run-shadow', scope: { tenant: 'acme' } };
