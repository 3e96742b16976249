import { describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { createRunner, defineAction, memoryStore, type TraceEvent } from '../../src/index.js';
import { ofType } from './support.js';

// A clock that moves one millisecond on every read, so each read gives a time of its own and an event stamped
// with a time read for another moment would show it.
function tickingClock(): Clock & { reads: () => number } {
  let now = Date.UTC(2026, 10, 30, 12);
  let reads = 0;
  return {
    now: () => {
      reads++;
      return ++now;
    },
    // Steps here end at once: a deadline never fires, unless the step is aborted.
    sleep: (_ms, signal) =>
      new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason))),
    reads: () => reads,
  };
}

function setup(gate = false) {
  const clock = tickingClock();
  const rows = new Map<string, string>();
  const action = defineAction({
    name: 'set_status',
    description: 'Sets a row status',
    input: {
      '~standard': {
        version: 1,
        vendor: 'test',
        validate: (value: unknown) => ({ value: value as { id: string; status: string } }),
      },
    },
    target: (input) => `row:${input.id}`,
    postcondition: 'The row has the requested status.',
    execute: async (input) => {
      rows.set(input.id, input.status);
      return { ok: true };
    },
    observe: async (input) => ({ status: rows.get(input.id) ?? null }),
    expect: (input) => ({ status: input.status }),
    ...(gate ? { needsApproval: () => true } : {}),
  });
  const events: TraceEvent[] = [];
  const store = memoryStore();
  const runner = createRunner({ store, clock, trace: { sinks: [{ write: (e) => void events.push(e) }] } });
  return { clock, action, events, runner, store };
}

describe('event times', () => {
  it('each state.transition carries the time of its store event, and a call never goes back in time', async () => {
    const { action, events, runner, store } = setup();
    const c = await runner.run(action, { id: 'r1', status: 'done' }, { runId: 'run-1' });
    expect(c.status).toBe('verified');
    const logged = await store.events(c.operationId);
    const transitions = ofType(events, 'state.transition');
    expect(transitions.map((e) => e.event)).toEqual(logged.map((e) => e.type));
    expect(transitions.map((e) => e.at)).toEqual(logged.map((e) => new Date(e.at).toISOString()));
    // The reservation is the moment its record was requested, which its `reserved` transition shares.
    const record = await store.get(c.operationId);
    expect(ofType(events, 'operation.reserved')[0]!.at).toBe(new Date(record!.requestedAt).toISOString());
    const times = events.map((e) => Date.parse(e.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
  });

  it('a decision with no policy is stamped with its selection, one with a policy with its own time', async () => {
    const { action, events, runner } = setup();
    await runner.run(action, { id: 'r1', status: 'done' }, { runId: 'run-1' });
    expect(ofType(events, 'permission.decided')[0]).toMatchObject({ policy: false });
    expect(ofType(events, 'permission.decided')[0]!.at).toBe(ofType(events, 'tool.selected')[0]!.at);

    const gated = setup();
    const withPolicy = defineAction({ ...gated.action, authorize: async () => true });
    await gated.runner.run(withPolicy, { id: 'r2', status: 'done' }, { runId: 'run-1' });
    const decided = ofType(gated.events, 'permission.decided')[0]!;
    expect(decided).toMatchObject({ policy: true, allowed: true });
    expect(Date.parse(decided.at)).toBeGreaterThan(Date.parse(ofType(gated.events, 'tool.selected')[0]!.at));
  });

  it("a reviewer's decision is stamped when it is made, not with the time of the record it found", async () => {
    const { action, events, runner, store } = setup(true);
    const parked = await runner.run(action, { id: 'r1', status: 'done' }, { runId: 'run-1' });
    expect(parked.errorCode).toBe('awaiting_approval');
    const found = await store.get(parked.operationId);
    events.length = 0;
    await runner.approve(parked.operationId, { by: 'lead', fingerprint: found!.fingerprint });
    const approved = ofType(events, 'state.transition')[0]!;
    expect(approved.event).toBe('approved');
    expect(Date.parse(approved.at)).toBeGreaterThan(found!.updatedAt);
    expect(Date.parse(approved.at)).toBeGreaterThanOrEqual(Date.parse(ofType(events, 'run.started')[0]!.at));
    // The time the decision's own store event carries.
    const stored = (await store.events(parked.operationId)).find((e) => e.type === 'approved');
    expect(Date.parse(approved.at)).toBe(stored!.at);
  });
});
