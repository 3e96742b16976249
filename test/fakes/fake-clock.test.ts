import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/testing/fakes/index.js';

const START = Date.parse('2026-01-01T00:00:00.000Z');

describe('FakeClock', () => {
  it('starts at 2026-01-01 by default, or at the given time', () => {
    expect(new FakeClock().now()).toBe(START);
    expect(new FakeClock(42).now()).toBe(42);
  });

  it('advance and set move time without sleeping', () => {
    const clock = new FakeClock(1000);
    clock.advance(250);
    expect(clock.now()).toBe(1250);
    clock.set(10);
    expect(clock.now()).toBe(10);
    expect(() => clock.advance(-1)).toThrow(RangeError);
  });

  it('sleep auto-advances and records every requested duration', async () => {
    const clock = new FakeClock(0);
    await clock.sleep(100);
    expect(clock.now()).toBe(100);
    await clock.sleep(250);
    expect(clock.now()).toBe(350);
    expect(clock.sleeps).toEqual([100, 250]);
  });

  it('resolves on a later macrotask, not synchronously', async () => {
    const clock = new FakeClock(0);
    let done = false;
    const p = clock.sleep(10).then(() => {
      done = true;
    });
    await Promise.resolve();
    await Promise.resolve();
    expect(done).toBe(false);
    await p;
    expect(done).toBe(true);
  });

  it('concurrent sleeps overlap and wake in deadline order', async () => {
    const clock = new FakeClock(0);
    const woke: [string, number][] = [];
    await Promise.all([
      clock.sleep(100).then(() => woke.push(['long', clock.now()])),
      clock.sleep(50).then(() => woke.push(['short', clock.now()])),
      clock.sleep(100).then(() => woke.push(['long2', clock.now()])),
    ]);
    expect(woke).toEqual([
      ['short', 50],
      ['long', 100],
      ['long2', 100],
    ]);
    expect(clock.now()).toBe(100);
  });

  it('lets a race between work and a sleep be won by the work', async () => {
    const clock = new FakeClock(0);
    const work = (async () => {
      await Promise.resolve();
      return 'work';
    })();
    const timeout = clock.sleep(1000).then(() => 'timeout');
    expect(await Promise.race([work, timeout])).toBe('work');
  });

  it('rejects with the signal reason when aborted before or during the sleep', async () => {
    const clock = new FakeClock(0);
    const before = new AbortController();
    before.abort(new Error('early'));
    await expect(clock.sleep(10, before.signal)).rejects.toThrow('early');

    const during = new AbortController();
    const p = clock.sleep(500, during.signal);
    during.abort(new Error('late'));
    await expect(p).rejects.toThrow('late');
    // An aborted sleep never advances the clock.
    await clock.sleep(0);
    expect(clock.now()).toBe(0);
    expect(clock.sleeps).toEqual([10, 500, 0]);
  });
});
