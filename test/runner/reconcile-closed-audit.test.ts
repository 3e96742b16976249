import { describe, expect, it } from 'vitest';
import { createRunner } from '../../src/runner/runner.js';
import { memoryStore } from '../../src/store/memory.js';
import type { OperationStore } from '../../src/store/types.js';

describe('reconcile loop: a store that refuses for good ends the loop', () => {
  it('a store closed under a running loop ends it with the reason, instead of retrying until aborted', async () => {
    const store = memoryStore();
    let claims = 0;
    const counted: OperationStore = {
      ...store,
      claimDue: (...args) => {
        claims++;
        return store.claimDue(...args);
      },
    };
    const runner = createRunner({ store: counted });
    const controller = new AbortController();
    const loop = runner.reconcile({ idleMs: 5, signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 30));
    await store.close();
    // The loop has a second to notice; only then is it aborted, so a loop that spins still ends this test.
    const ended = await Promise.race([
      loop.then((report) => ({ report })),
      new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 1000)),
    ]);
    controller.abort();
    await loop;
    expect(ended).not.toBe('still running');
    const { report } = ended as { report: Awaited<typeof loop> };
    expect(report.lastError).toMatch(/closed/);
    const afterClose = claims;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(claims).toBe(afterClose);
  });

  it('a store that is down (a driver error) is still retried until it answers', async () => {
    const store = memoryStore();
    let failures = 3;
    const flaky: OperationStore = {
      ...store,
      claimDue: (...args) =>
        failures-- > 0 ? Promise.reject(new Error('connection refused')) : store.claimDue(...args),
    };
    const runner = createRunner({ store: flaky });
    const controller = new AbortController();
    const loop = runner.reconcile({ idleMs: 1, signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 300));
    controller.abort();
    const report = await loop;
    expect(failures).toBeLessThan(0);
    expect(report.errors).toBe(3);
  });
});
