import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAction } from '../../src/contract/define.js';
import { ReadbackError } from '../../src/errors.js';
import { OTEL_NAMES, otelSink } from '../../src/otel/index.js';
import { createRunner } from '../../src/runner/runner.js';
import { memoryStore } from '../../src/store/memory.js';
import { otelHarness } from '../otel/support.js';
import { ctx, setup } from './support.js';

/** A shadow action over one in-memory flag; `execute` is the live tool under test. */
function flagAction(execute: () => unknown, extra: Record<string, unknown> = {}) {
  const state = { done: false };
  const action = defineAction({
    name: 'set_flag',
    description: 'Set the flag.',
    postcondition: 'The flag is set.',
    input: z.object({}),
    target: () => 'flag',
    execute: async () => {
      state.done = true;
      return execute();
    },
    observe: async () => ({ done: state.done }),
    expect: () => ({ done: true }),
    shadow: true,
    ...extra,
  });
  return { action, state };
}

describe('shadow mode: the tool’s result is handed back whatever readback makes of it', () => {
  it('a result whose fields throw when read (a strict SDK proxy) is returned as is, not replaced by an error', async () => {
    const strict = new Proxy(
      {},
      {
        get(_target, key) {
          // `then` and symbols are read by `await` and by readback's marker check: a strict SDK object lacks them.
          if (typeof key === 'symbol' || key === 'then') return undefined;
          throw new Error(`unknown property ${String(key)}`);
        },
      },
    );
    const { action } = flagAction(() => strict);
    const runner = createRunner();
    const out = await runner.shadow(action, {}, ctx);
    expect(out.executed).toBe(true);
    expect(out.result).toBe(strict);
    // Its claim cannot be read, so it counts as success and is still judged against the read-back.
    expect(out.completion.shadow).toEqual({ claimed: 'success', status: 'verified', agrees: true });
    const record = await runner.store.get(out.completion.operationId);
    expect(record?.completion?.shadow).toEqual({ claimed: 'success', status: 'verified', agrees: true });
  });

  it('a result with a throwing `ok` getter is returned as the same object', async () => {
    const body = {
      get ok(): boolean {
        throw new Error('lazy field failed');
      },
    };
    const { action } = flagAction(() => body);
    const out = await createRunner().shadow(action, {}, ctx);
    expect(out.result).toBe(body);
  });
});

describe('shadow mode: the verdict recorded', () => {
  it('a tool that said it failed while its effect landed disagrees, in the completion and the record', async () => {
    const body = { ok: false, error: 'upstream timeout' };
    const { action, state } = flagAction(() => body);
    const runner = createRunner();
    const out = await runner.shadow(action, {}, ctx);
    expect(out.result).toBe(body);
    expect(state.done).toBe(true);
    expect(out.completion.shadow).toEqual({ claimed: 'failure', status: 'verified', agrees: false });
    const record = await runner.store.get(out.completion.operationId);
    expect(record?.completion?.shadow).toEqual({ claimed: 'failure', status: 'verified', agrees: false });
  });
});

describe('shadow mode: readback never runs the live tool on its own', () => {
  it('a call stopped before its tool ran is not executed by a later poll or reconcile', async () => {
    const controller = new AbortController();
    let runs = 0;
    const { action, state } = flagAction(
      () => {
        runs++;
        return { ok: true };
      },
      {
        // The agent's call is aborted while readback reads the baseline, after the record is reserved.
        before: async () => {
          controller.abort();
          return { done: false };
        },
      },
    );
    const runner = createRunner({ actions: [action] });
    const out = await runner.shadow(action, {}, { ...ctx, signal: controller.signal });
    expect(out.executed).toBe(false);
    expect(out.completion).toMatchObject({ status: 'failed', errorCode: 'aborted' });

    const polled = await runner.poll(out.completion.operationId);
    await runner.reconcile({ once: true });
    expect(runs).toBe(0);
    expect(state.done).toBe(false);
    expect(polled).toMatchObject({ status: 'failed', errorCode: 'not_executed' });
    expect(polled.shadow).toEqual({ claimed: 'none', status: 'failed', agrees: null });
    const record = await runner.store.get(out.completion.operationId);
    expect(record?.attempt).toBe(0);
    expect(record?.completion?.errorCode).toBe('not_executed');
  });
});

describe('shadow mode in OpenTelemetry metrics', () => {
  let harness: ReturnType<typeof otelHarness> | undefined;
  afterEach(() => harness?.shutdown());

  it('readback.completions counts a shadow `verified` apart from a real one, marked readback.shadow', async () => {
    harness = otelHarness();
    const sink = otelSink({ tracer: harness.tracer, meter: harness.meter });
    const shadowed = setup({ shadow: true, trace: { sinks: [sink] } });
    await shadowed.runner.shadow(shadowed.hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    const live = setup({ trace: { sinks: [sink] } });
    await live.runner.run(live.hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);

    const verified = (await harness.points(OTEL_NAMES.completionsMetric)).filter(
      (p) => p.attributes['readback.status'] === 'verified',
    );
    expect(verified.map((p) => [p.attributes['readback.shadow'], p.value]).sort()).toEqual([
      [false, 1],
      [true, 1],
    ]);
  });
});

describe('shadow mode: readback failing after the live tool ran', () => {
  // A store that is closed under the call once the tool has run: the settle is refused as misuse.
  function closingStore() {
    const store = memoryStore();
    let transitions = 0;
    return {
      ...store,
      transition: ((...args: Parameters<typeof store.transition>) => {
        transitions++;
        if (transitions >= 2) return Promise.reject(new ReadbackError('store_closed', 'the store is closed'));
        return store.transition(...args);
      }) as typeof store.transition,
    };
  }

  it('still hands the agent the tool’s own result, with an unknown completion for operators', async () => {
    const result = { ok: true, id: 'r-1' };
    const { action, state } = flagAction(() => result);
    const runner = createRunner({ store: closingStore() });
    const out = await runner.shadow(action, {}, ctx);
    expect(state.done).toBe(true);
    expect(out.executed).toBe(true);
    expect(out.result).toBe(result);
    expect(out.completion).toMatchObject({ status: 'unknown', errorCode: 'store_unavailable' });
    expect(out.completion.reason).toContain('the store is closed');
    expect(out.completion.shadow).toMatchObject({ claimed: 'success', agrees: null });
  });

  it('re-throws the tool’s own error, not readback’s', async () => {
    const thrown = new Error('live tool failed');
    const { action } = flagAction(() => {
      throw thrown;
    });
    const runner = createRunner({ store: closingStore() });
    await expect(runner.shadow(action, {}, ctx)).rejects.toBe(thrown);
  });

  it('surfaces readback’s error when the tool never ran', async () => {
    const { action, state } = flagAction(() => ({ ok: true }));
    const store = memoryStore();
    const runner = createRunner({
      store: { ...store, reserve: () => Promise.reject(new ReadbackError('store_closed', 'closed')) },
    });
    await expect(runner.shadow(action, {}, ctx)).rejects.toMatchObject({ code: 'store_closed' });
    expect(state.done).toBe(false);
  });
});

describe('shadow mode: the store down before the live tool ran', () => {
  // A store whose disk or server is gone: the reservation fails with an I/O error, not a misuse.
  const downStore = () => ({
    ...memoryStore(),
    reserve: () => Promise.reject(new Error('SQLITE_IOERR: disk I/O error')),
  });

  it('still runs the live tool and hands back its result, with an unknown completion for operators', async () => {
    const result = { ok: true, id: 'r-2' };
    const { action, state } = flagAction(() => result);
    const runner = createRunner({ store: downStore() });
    const out = await runner.shadow(action, {}, { ...ctx, actor: 'agent-7' });
    expect(state.done).toBe(true);
    expect(out.executed).toBe(true);
    expect(out.result).toBe(result);
    expect(out.completion).toMatchObject({
      status: 'unknown',
      errorCode: 'store_unavailable',
      nextAllowedAction: 'ask_user',
    });
    expect(out.completion.reason).toContain('ran without a record');
    expect(out.completion.reason).toContain('disk I/O error');
    expect(out.completion.shadow).toMatchObject({ claimed: 'success', agrees: null });
  });

  it('re-throws the live tool’s own error', async () => {
    const thrown = new Error('live tool failed');
    const { action, state } = flagAction(() => {
      throw thrown;
    });
    const runner = createRunner({ store: downStore() });
    await expect(runner.shadow(action, {}, ctx)).rejects.toBe(thrown);
    expect(state.done).toBe(true);
  });

  it('gives the tool the caller’s signal and the call’s ids', async () => {
    const seen: { signal?: AbortSignal; operationId?: string; idempotencyKey?: string; runId?: string } = {};
    const action = defineAction({
      name: 'peek',
      description: 'Peek.',
      postcondition: 'Nothing.',
      input: z.object({}),
      target: () => 'peek',
      execute: async (_input, stepCtx) => {
        Object.assign(seen, {
          signal: stepCtx.signal,
          operationId: stepCtx.operationId,
          idempotencyKey: stepCtx.idempotencyKey,
          runId: stepCtx.runId,
        });
        return { ok: true };
      },
      observe: async () => null,
      expect: () => ({}),
      shadow: true,
    });
    const controller = new AbortController();
    const runner = createRunner({ store: downStore() });
    const out = await runner.shadow(action, {}, { ...ctx, signal: controller.signal });
    expect(seen.signal).toBe(controller.signal);
    expect(seen.runId).toBe(ctx.runId);
    expect(seen.operationId).toBe(out.completion.operationId);
    expect(seen.idempotencyKey).toBe(`shadow:${out.completion.operationId}`);
  });

  it('is not what run() does: a live run with the store down executes nothing', async () => {
    const { action, state } = flagAction(() => ({ ok: true }), { shadow: false });
    const runner = createRunner({ store: downStore() });
    const c = await runner.run(action, {}, ctx);
    expect(c).toMatchObject({ status: 'failed', errorCode: 'store_unavailable' });
    expect(state.done).toBe(false);
  });
});
