import { expect } from 'vitest';
import type { Completion } from '../../src/index.js';
import { createRunner } from '../../src/index.js';
import { claimsCompletion } from '../../src/messages/words.js';
import { createHelpdesk, type HelpdeskOptions } from '../../src/testing/index.js';

/** A helpdesk on a fake clock with a runner sharing that clock; jitter fixed for repeatable backoff. */
export function setup(options: HelpdeskOptions = {}) {
  const hd = createHelpdesk(options);
  const runner = createRunner({ clock: hd.clock, random: () => 0.5 });
  hd.tickets.seed([
    { id: 'T-104', tenant: 'acme' },
    { id: 'T-105', tenant: 'acme', status: 'resolved' },
    { id: 'T-900', tenant: 'globex' },
  ]);
  return { hd, runner };
}

/** The run context most cases use. */
export const ctx = { runId: 'run-7f2c', scope: { tenant: 'acme' } };

/** The calls a fake received for one method, as their argument lists. */
export function callsTo(fake: { calls: { method: string; args: unknown[] }[] }, method: string): unknown[][] {
  return fake.calls.filter((c) => c.method === method).map((c) => c.args);
}

/** Asserts the message class allowed for the status: completion words only when verified. */
export function expectMessageClass(c: Completion): void {
  expect(c.message.length).toBeGreaterThan(0);
  expect(claimsCompletion(c.message)).toBe(c.status === 'verified');
  if (c.status === 'pending' || c.status === 'unknown') expect(c.message).toContain(c.operationId);
}
