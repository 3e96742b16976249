import { describe, expect, it } from 'vitest';
import type { ActionContract, StandardSchemaV1, StepContext } from '../../src/index.js';
import {
  accepted,
  createRunner,
  DEFAULTS,
  defineAction,
  ReadbackError,
  systemClock,
} from '../../src/index.js';
import { FakeClock } from '../../src/testing/fakes/fake-clock.js';

const anything: StandardSchemaV1<unknown, { id: string }> = {
  '~standard': { version: 1, vendor: 'test', validate: (value) => ({ value: value as { id: string } }) },
};

type Job = { id: string; state: 'running' | 'succeeded' | 'failed'; done: boolean };

/** A tiny provider: execute queues a job; the test decides when it finishes. */
class Jobs {
  readonly jobs = new Map<string, Job>();
  executes = 0;
  observes = 0;
  befores = 0;

  submit(id: string): void {
    this.executes++;
    this.jobs.set(id, { id, state: 'running', done: false });
  }

  finish(id: string): void {
    this.jobs.set(id, { id, state: 'succeeded', done: true });
  }

  read(id: string): Job | null {
    this.observes++;
    return this.jobs.get(id) ?? null;
  }
}

// On a FakeClock a step's deadline is a virtual sleep that wakes on the next macrotask, so a step that
// hangs "times out" at once. Aborts that must land while a step is in flight are queued as microtasks.

/** Rejects when `signal` aborts, the way fetch does. */
function abortable<T>(signal: AbortSignal, work: () => T | Promise<T> = () => new Promise<T>(() => {})) {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    Promise.resolve().then(work).then(resolve, reject);
  });
}

function acceptedAction(jobs: Jobs, overrides: Partial<ActionContract<{ id: string }, Job>> = {}) {
  return defineAction<{ id: string }, Job>({
    name: 'run_job',
    description: 'Run a job.',
    input: anything,
    target: (i) => `job:${i.id}`,
    mode: 'accepted',
    postcondition: 'The job finished.',
    execute: async (i) => {
      jobs.submit(i.id);
      return accepted(i.id);
    },
    observe: async (i) => jobs.read(i.id),
    terminal: (job) => job.state,
    expect: () => ({ done: true }),
    poll: { maxDurationMs: 60_000, maxReads: 20, initialDelayMs: 5_000, maxDelayMs: 10_000 },
    ...overrides,
  });
}

function committedAction(jobs: Jobs, overrides: Partial<ActionContract<{ id: string }, Job>> = {}) {
  return defineAction<{ id: string }, Job>({
    name: 'finish_job',
    description: 'Finish a job synchronously.',
    input: anything,
    target: (i) => `job:${i.id}`,
    postcondition: 'The job is done.',
    maxInFlightMs: 10_000,
    execute: async (i) => {
      jobs.submit(i.id);
      jobs.finish(i.id);
      return { ok: true };
    },
    observe: async (i) => jobs.read(i.id),
    expect: () => ({ done: true }),
    ...overrides,
  });
}

const ctx = { runId: 'run-abort' };

describe('an already-aborted signal', () => {
  it.each(['committed', 'accepted'] as const)('%s: failed/aborted, nothing executed', async (mode) => {
    const jobs = new Jobs();
    const action = mode === 'accepted' ? acceptedAction(jobs) : committedAction(jobs);
    const runner = createRunner({ clock: new FakeClock() });
    const signal = AbortSignal.abort(new Error('user cancelled'));

    const c = await runner.run(action, { id: 'j1' }, { ...ctx, signal });
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('aborted');
    expect(c.attempt).toBe(0);
    expect(c.safeToRepeat).toBe(true);
    expect(c.nextAllowedAction).toBe('retry');
    expect(jobs.executes).toBe(0);
    expect(jobs.observes).toBe(0);
    expect(await runner.store.list()).toEqual([]);
  });

  it('the same call without the aborted signal then runs normally', async () => {
    const jobs = new Jobs();
    const action = committedAction(jobs);
    const runner = createRunner({ clock: new FakeClock() });
    await runner.run(action, { id: 'j1' }, { ...ctx, signal: AbortSignal.abort() });
    const c = await runner.run(action, { id: 'j1' }, ctx);
    expect(c.status).toBe('verified');
    expect(jobs.executes).toBe(1);
  });
});

describe('abort during the baseline read', () => {
  it('failed/aborted, nothing executed, and the record stays re-runnable', async () => {
    const jobs = new Jobs();
    const controller = new AbortController();
    const runner = createRunner({ clock: new FakeClock() });
    const slow = committedAction(jobs, {
      before: (_i, stepCtx: StepContext) => {
        jobs.befores++;
        if (jobs.befores === 1) {
          queueMicrotask(() => controller.abort());
          return abortable<Job | null>(stepCtx.signal);
        }
        return null;
      },
    });
    const c = await runner.run(slow, { id: 'j1' }, { ...ctx, signal: controller.signal });
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('aborted');
    expect(jobs.executes).toBe(0);
    expect((await runner.store.get(c.operationId))?.lifecycle).toBe('requested');

    // Same call, same key: nothing ran, so it may start over.
    const again = await runner.run(slow, { id: 'j1' }, ctx);
    expect(again.operationId).toBe(c.operationId);
    expect(again.status).toBe('verified');
    expect(jobs.executes).toBe(1);
  });
});

describe('abort during accepted polling', () => {
  it('returns pending promptly on the wall clock, with the operation open', async () => {
    const jobs = new Jobs();
    const action = acceptedAction(jobs);
    const runner = createRunner({ clock: systemClock, random: () => 0.5 });
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(new Error('user went away')), 30);

    const c = await runner.run(action, { id: 'j1' }, { ...ctx, signal: controller.signal });
    const elapsed = Date.now() - started;
    // The first poll delay alone is 2.5 s; the budget is a minute. Abort must cut the wait short.
    expect(elapsed).toBeLessThan(1_500);
    expect(c.status).toBe('pending');
    expect(c.errorCode).toBe('in_progress');
    expect(c.nextAllowedAction).toBe('poll');
    expect(c.message).toContain(c.operationId);
    expect(jobs.executes).toBe(1);

    const record = await runner.store.get(c.operationId);
    expect(record?.lifecycle).toBe('accepted');
    expect(record?.nextPollAt).toEqual(expect.any(Number));

    // Later (once due: an earlier poll is answered from the record), without the aborted signal, polling
    // continues and never re-executes. A fake clock at the due time stands in for waiting 2.5 s of wall time.
    jobs.finish('j1');
    const due = new FakeClock(record?.nextPollAt ?? 0);
    const later = await createRunner({ store: runner.store, clock: due, actions: [action] }).poll(
      c.operationId,
    );
    expect(later.status).toBe('verified');
    expect(jobs.executes).toBe(1);
  });

  it('on a fake clock: abort between reads stops polling at once', async () => {
    const jobs = new Jobs();
    const controller = new AbortController();
    const action = acceptedAction(jobs, {
      observe: async (i) => {
        const job = jobs.read(i.id);
        // Abort just after the second read, while the drive goes to sleep before the third.
        if (jobs.observes === 2) queueMicrotask(() => controller.abort());
        return job;
      },
    });
    const clock = new FakeClock();
    const runner = createRunner({ clock, random: () => 0.5 });
    const started = clock.now();

    const c = await runner.run(action, { id: 'j1' }, { ...ctx, signal: controller.signal });
    expect(c.status).toBe('pending');
    expect(jobs.observes).toBe(2);
    expect(clock.now() - started).toBeLessThan(action.poll.maxDurationMs);
    const record = await runner.store.get(c.operationId);
    expect(record?.reads).toBe(2);
    expect(record?.lifecycle).toBe('running');

    jobs.finish('j1');
    const later = await runner.poll(c.operationId, { wait: true });
    expect(later.status).toBe('verified');
    expect(jobs.executes).toBe(1);
  });

  it('abort while following a poll() call returns pending and leaves the operation open', async () => {
    const jobs = new Jobs();
    const action = acceptedAction(jobs);
    const clock = new FakeClock();
    const runner = createRunner({ clock, random: () => 0.5 });
    const first = await runner.run(action, { id: 'j1' }, { ...ctx, wait: false });
    expect(first.status).toBe('pending');

    const controller = new AbortController();
    const during = runner.poll(first.operationId, { wait: true, signal: controller.signal });
    setImmediate(() => controller.abort());
    const c = await during;
    expect(c.status).toBe('pending');
    expect(jobs.observes).toBeLessThan(action.poll.maxReads);
    expect((await runner.store.get(first.operationId))?.lifecycle).not.toBe('settled');

    jobs.finish('j1');
    // Waits for the due time the record was parked with: an earlier plain poll is answered unread.
    expect((await runner.poll(first.operationId, { wait: true })).status).toBe('verified');
    expect(jobs.executes).toBe(1);
  });
});

describe('abort during execute: the drive reads back instead of assuming failure', () => {
  /** execute applies (or not) the effect, then hangs until the run is aborted, like an interrupted fetch. */
  function interrupted(jobs: Jobs, controller: AbortController, lands: boolean) {
    return async (i: { id: string }, stepCtx: StepContext) => {
      jobs.executes++;
      if (lands) jobs.jobs.set(i.id, { id: i.id, state: 'succeeded', done: true });
      queueMicrotask(() => controller.abort(new Error('user cancelled')));
      return abortable(stepCtx.signal);
    };
  }

  it('committed, effect landed before the abort: verified by the read-back', async () => {
    const jobs = new Jobs();
    const controller = new AbortController();
    const action = committedAction(jobs, { execute: interrupted(jobs, controller, true) });
    const runner = createRunner({ clock: new FakeClock() });

    const c = await runner.run(action, { id: 'j1' }, { ...ctx, signal: controller.signal });
    expect(controller.signal.aborted).toBe(true);
    expect(jobs.observes).toBeGreaterThanOrEqual(1);
    expect(c.status).toBe('verified');
    expect(c.attempt).toBe(1);
    expect(jobs.executes).toBe(1);
    const events = await runner.store.events(c.operationId);
    expect(events.some((e) => typeof e.detail?.error === 'string')).toBe(true);
  });

  it('committed, effect not visible: unknown inside the settlement window, not failed', async () => {
    const jobs = new Jobs();
    const controller = new AbortController();
    const action = committedAction(jobs, { execute: interrupted(jobs, controller, false) });
    const runner = createRunner({ clock: new FakeClock() });

    const c = await runner.run(action, { id: 'j1' }, { ...ctx, signal: controller.signal });
    expect(jobs.observes).toBeGreaterThanOrEqual(1);
    expect(c.status).toBe('unknown');
    expect(c.errorCode).toBe('in_flight');
    expect(c.nextAllowedAction).toBe('poll');
    expect((await runner.store.get(c.operationId))?.lifecycle).toBe('executing');
  });

  it('accepted, job visible after the abort: the drive reads it back rather than failing', async () => {
    const jobs = new Jobs();
    const controller = new AbortController();
    const action = acceptedAction(jobs, {
      execute: async (i, stepCtx) => {
        jobs.submit(i.id);
        queueMicrotask(() => controller.abort());
        return abortable(stepCtx.signal);
      },
    });
    const runner = createRunner({ clock: new FakeClock(), random: () => 0.5 });
    const c = await runner.run(action, { id: 'j1' }, { ...ctx, signal: controller.signal });
    expect(jobs.observes).toBeGreaterThanOrEqual(1);
    expect(c.status).toBe('pending');
    expect((await runner.store.get(c.operationId))?.lifecycle).toBe('running');

    jobs.finish('j1');
    expect((await runner.poll(c.operationId, { wait: true })).status).toBe('verified');
    expect(jobs.executes).toBe(1);
  });

  it('abort during the read-back after a clean execute: unknown, not failed; poll later verifies', async () => {
    const jobs = new Jobs();
    const controller = new AbortController();
    const action = committedAction(jobs, {
      observe: (i, stepCtx) => {
        jobs.observes++;
        if (jobs.observes === 1) {
          queueMicrotask(() => controller.abort());
          return abortable<Job | null>(stepCtx.signal);
        }
        return jobs.jobs.get(i.id) ?? null;
      },
    });
    const runner = createRunner({ clock: new FakeClock() });
    const c = await runner.run(action, { id: 'j1' }, { ...ctx, signal: controller.signal });
    expect(c.status).toBe('unknown');
    expect(c.errorCode).toBe('aborted');
    expect(c.nextAllowedAction).not.toBe('none');
    expect((await runner.store.get(c.operationId))?.lifecycle).toBe('executing');

    const later = await runner.poll(c.operationId);
    expect(later.status).toBe('verified');
    expect(jobs.executes).toBe(1);
  });
});

describe('abort during the committed settle window', () => {
  it('a lagging read cut short by an abort is never verified', async () => {
    const jobs = new Jobs();
    const controller = new AbortController();
    const action = committedAction(jobs, {
      settle: { timeoutMs: 5_000, intervalMs: 500 },
      execute: async (i) => {
        jobs.submit(i.id);
        return { ok: true };
      },
      observe: async (i) => {
        const job = jobs.read(i.id);
        if (jobs.observes === 2) queueMicrotask(() => controller.abort());
        return job;
      },
    });
    const clock = new FakeClock();
    const runner = createRunner({ clock });
    const c = await runner.run(action, { id: 'j1' }, { ...ctx, signal: controller.signal });
    expect(jobs.observes).toBe(2);
    expect(c.status).not.toBe('verified');
    expect(c.nextAllowedAction).not.toBe('none');
  });
});

describe('execute cut off by its own deadline', () => {
  /** An execute that never answers (the request may or may not have reached the provider). */
  function hangingAction(jobs: Jobs, timing: { executeTimeoutMs?: number; maxInFlightMs?: number }) {
    return defineAction<{ id: string }, Job>({
      name: 'hanging_job',
      description: 'Submit a job over a flaky link.',
      input: anything,
      target: (i) => `job:${i.id}`,
      postcondition: 'The job is done.',
      execute: () => {
        jobs.executes++;
        return new Promise(() => {});
      },
      observe: async (i) => jobs.read(i.id),
      expect: () => ({ done: true }),
      ...timing,
    });
  }

  it('a timeout well inside the settlement window: unknown/in_flight, then provable absence later', async () => {
    const jobs = new Jobs();
    const action = hangingAction(jobs, { executeTimeoutMs: 1_000, maxInFlightMs: 20_000 });
    const clock = new FakeClock();
    const runner = createRunner({ clock });
    const c = await runner.run(action, { id: 'j1' }, ctx);
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'in_flight', nextAllowedAction: 'poll' });
    expect(jobs.executes).toBe(1);

    clock.advance(20_000);
    const later = await runner.poll(c.operationId);
    expect(later).toMatchObject({ status: 'failed', errorCode: 'effect_absent' });
    expect(jobs.executes).toBe(1);
  });

  // Regression: the settlement window must run from when the client gave up on execute, not from when
  // it started; otherwise an execute that hangs to its timeout has used up the window before the first
  // read, and a request that may still land is reported failed/effect_absent.
  it('a timeout is never judged by a window that closed while execute was still running', async () => {
    for (const timing of [{}, { executeTimeoutMs: 5_000, maxInFlightMs: 2_000 }]) {
      const jobs = new Jobs();
      let action: ReturnType<typeof hangingAction>;
      try {
        action = hangingAction(jobs, timing);
      } catch (error) {
        expect(error).toBeInstanceOf(ReadbackError);
        continue;
      }
      expect(action.executeTimeoutMs).toBe(timing.executeTimeoutMs ?? DEFAULTS.executeTimeoutMs);
      const runner = createRunner({ clock: new FakeClock() });
      const c = await runner.run(action, { id: 'j1' }, ctx);
      expect(jobs.executes).toBe(1);
      expect(c.status).toBe('unknown');
      expect(c.errorCode).toBe('in_flight');
    }
  });
});
