// withDeadline on each kind of clock: the system clock's timers, a clock's own `deadline`, and an abortable
// `sleep`. A step ends with its work or its deadline, whichever comes first; the other is cancelled, and the
// lazily built signal aborts on the deadline or on the caller's signal.
import { describe, expect, it } from 'vitest';
import { type Clock, systemClock } from '../../src/clock.js';
import { NEVER_ABORTED, StepTimeout, withDeadline } from '../../src/runner/timeout.js';

/** A clock whose deadlines fire only when the test says so, and which counts the ones still armed. */
function manualClock(kind: 'deadline' | 'sleep') {
  const armed = new Set<() => void>();
  const clock: Clock = {
    now: () => 0,
    sleep: (_ms, signal) =>
      new Promise<void>((resolve, reject) => {
        const fire = () => {
          armed.delete(fire);
          resolve();
        };
        armed.add(fire);
        signal?.addEventListener('abort', () => {
          armed.delete(fire);
          reject(signal.reason);
        });
      }),
  };
  if (kind === 'deadline') {
    clock.deadline = (_ms, fire) => {
      const once = () => {
        armed.delete(once);
        fire();
      };
      armed.add(once);
      return () => armed.delete(once);
    };
  }
  const fireAll = () => {
    for (const fire of [...armed]) fire();
  };
  return { clock, armed, fireAll };
}

const turns = () => new Promise((resolve) => setImmediate(resolve));

describe.each(['deadline', 'sleep'] as const)('withDeadline on a clock with %s', (kind) => {
  it('resolves with the work and disarms the deadline', async () => {
    const { clock, armed } = manualClock(kind);
    const result = withDeadline(clock, 'execute', 100, NEVER_ABORTED, async () => 'done');
    expect(armed.size).toBe(1);
    await expect(result).resolves.toBe('done');
    await turns();
    expect(armed.size).toBe(0);
  });

  it('rejects with StepTimeout when the deadline fires first, and aborts the signal the step asked for', async () => {
    const { clock, fireAll } = manualClock(kind);
    let signal: AbortSignal | undefined;
    const result = withDeadline(clock, 'observe', 100, NEVER_ABORTED, (lazy) => {
      signal = lazy.signal();
      return new Promise<never>(() => {});
    });
    fireAll();
    const error = await result.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StepTimeout);
    expect((error as StepTimeout).message).toBe('observe did not answer within 100 ms');
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe(error);
  });

  it('a step that throws synchronously rejects with its error and disarms the deadline', async () => {
    const { clock, armed } = manualClock(kind);
    const boom = new Error('boom');
    const result = withDeadline(clock, 'execute', 100, NEVER_ABORTED, () => {
      throw boom;
    });
    await expect(result).rejects.toBe(boom);
    await turns();
    expect(armed.size).toBe(0);
  });
});

describe('withDeadline on the system clock', () => {
  it('times out a step that never answers', async () => {
    const result = withDeadline(
      systemClock,
      'execute',
      20,
      NEVER_ABORTED,
      () => new Promise<never>(() => {}),
    );
    await expect(result).rejects.toBeInstanceOf(StepTimeout);
  });

  it('passes the caller abort to a signal built before it, and not to one never asked for', async () => {
    const caller = new AbortController();
    let signal: AbortSignal | undefined;
    let finish: (value: string) => void = () => {};
    const result = withDeadline(systemClock, 'execute', 10_000, caller.signal, (lazy) => {
      signal = lazy.signal();
      return new Promise<string>((resolve) => {
        finish = resolve;
      });
    });
    caller.abort('stop');
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe('stop');
    finish('late');
    await expect(result).resolves.toBe('late');
  });

  it('a signal asked for after the deadline passed is already aborted with the timeout', async () => {
    let ask: () => AbortSignal = () => NEVER_ABORTED;
    const result = withDeadline(systemClock, 'execute', 5, NEVER_ABORTED, (lazy) => {
      ask = () => lazy.signal();
      return new Promise<never>(() => {});
    });
    const error = await result.catch((e: unknown) => e);
    expect(ask().aborted).toBe(true);
    expect(ask().reason).toBe(error);
  });

  it('removes its listener from the caller signal when the step ends', async () => {
    const caller = new AbortController();
    const added: unknown[] = [];
    const removed: unknown[] = [];
    const add = caller.signal.addEventListener.bind(caller.signal);
    const remove = caller.signal.removeEventListener.bind(caller.signal);
    caller.signal.addEventListener = ((type: string, listener: () => void, options?: unknown) => {
      added.push(listener);
      add(type, listener, options as Parameters<typeof add>[2]);
    }) as typeof caller.signal.addEventListener;
    caller.signal.removeEventListener = ((type: string, listener: () => void) => {
      removed.push(listener);
      remove(type, listener);
    }) as typeof caller.signal.removeEventListener;
    await withDeadline(systemClock, 'execute', 10_000, caller.signal, async (lazy) => lazy.signal().aborted);
    expect(added).toHaveLength(1);
    expect(removed).toEqual(added);
  });
});
