import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAction } from '../../src/contract/define.js';
import { createRunner } from '../../src/runner/runner.js';
import { memoryStore } from '../../src/store/memory.js';
import type { OperationStore } from '../../src/store/types.js';
import { ctx } from './support.js';

/** A shadow action over a row store whose writes the test counts: the truth the completion is judged against. */
function rowAction(live: (id: string) => unknown = () => ({ ok: true })) {
  const rows = new Map<string, { id: string; status: string }>();
  let writes = 0;
  const action = defineAction({
    name: 'set_status',
    description: 'Set a row status.',
    postcondition: 'The row has the requested status.',
    input: z.object({ id: z.string(), status: z.string() }),
    target: (input) => `row:${input.id}`,
    execute: async (input) => {
      writes++;
      rows.set(input.id, { id: input.id, status: input.status });
      return live(input.id);
    },
    observe: async (input) => rows.get(input.id) ?? null,
    expect: (input) => ({ status: input.status }),
    shadow: true,
  });
  return { action, rows, writes: () => writes };
}

/** A memory store whose `transition` fails for as long as `down()` says so. */
function flakyStore(down: () => boolean): OperationStore {
  const store = memoryStore();
  return {
    ...store,
    reserve: (op, event) => store.reserve(op, event),
    get: (id) => store.get(id),
    getByKey: (key) => store.getByKey(key),
    list: (filter) => store.list(filter),
    events: (id) => store.events(id),
    claimDue: (...args) => store.claimDue(...args),
    close: () => store.close(),
    transition: (...args) =>
      down() ? Promise.reject(new Error('disk I/O error')) : store.transition(...args),
  };
}

describe('shadow mode: a store failing after the reservation never keeps the live tool from running', () => {
  it('runs the tool and hands back its result when the move to executing fails, the record left as it was', async () => {
    const { action, rows, writes } = rowAction(() => ({ ok: true, ticket: 'T-9' }));
    const store = flakyStore(() => true);
    const runner = createRunner({ store });
    const out = await runner.shadow(action, { id: 'r1', status: 'done' }, ctx);

    expect(out.executed).toBe(true);
    expect(out.result).toEqual({ ok: true, ticket: 'T-9' });
    expect(writes()).toBe(1);
    expect(rows.get('r1')).toEqual({ id: 'r1', status: 'done' });
    expect(out.completion).toMatchObject({ status: 'unknown', errorCode: 'store_unavailable' });
    expect(out.completion.reason).toMatch(/ran unrecorded: disk I\/O error/);
    expect(out.completion.shadow).toEqual({ claimed: 'success', status: 'unknown', agrees: null });
    const record = await store.get(out.completion.operationId);
    expect(record).toMatchObject({ lifecycle: 'requested', attempt: 0 });
  });

  it('re-throws the live tool’s own error unchanged', async () => {
    const boom = new Error('provider said no');
    const { action, writes } = rowAction(() => {
      throw boom;
    });
    const runner = createRunner({ store: flakyStore(() => true) });
    await expect(runner.shadow(action, { id: 'r2', status: 'done' }, ctx)).rejects.toBe(boom);
    expect(writes()).toBe(1);
  });

  it('records the run once the store is back, so a read-back judges it instead of calling it never executed', async () => {
    const { action, writes } = rowAction();
    let failures = 1;
    const store = flakyStore(() => failures-- > 0);
    const runner = createRunner({ store, actions: [action] });
    const out = await runner.shadow(action, { id: 'r3', status: 'done' }, ctx);
    expect(out.executed).toBe(true);
    expect(out.completion.reason).toMatch(/recorded afterwards, due for a read-back/);
    const id = out.completion.operationId;
    expect(await store.get(id)).toMatchObject({ lifecycle: 'executing', attempt: 1 });
    const events = await store.events(id);
    expect(events.at(-1)).toMatchObject({ type: 'executing', detail: { unrecordedRun: 'disk I/O error' } });

    await runner.reconcile({ once: true });
    const settled = await store.get(id);
    expect(settled).toMatchObject({ lifecycle: 'settled', status: 'verified' });
    expect(settled?.completion?.shadow).toEqual({ claimed: 'success', status: 'verified', agrees: true });
    // Read back, never run again by readback.
    expect(writes()).toBe(1);
  });
});
