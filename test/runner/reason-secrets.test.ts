import { describe, expect, it } from 'vitest';
import { createRunner, defineAction, memoryStore } from '../../src/index.js';

const input = {
  '~standard': { version: 1 as const, vendor: 'test', validate: (value: unknown) => ({ value }) },
};

function action(execute: () => Promise<unknown>) {
  return defineAction({
    name: 'set_flag',
    description: 'Sets a flag.',
    postcondition: 'The flag is set.',
    input,
    target: () => 'flag',
    execute,
    mode: 'optimistic',
  });
}

describe('the reason a completion quotes from an error, which goes to the model', () => {
  it('has the secrets of a store error taken out (a connection string with its password)', async () => {
    const store = {
      ...memoryStore(),
      reserve: () => Promise.reject(new Error('connect failed: postgres://app:hunter2@db.internal:5432/ops')),
    };
    const c = await createRunner({ store }).run(
      action(async () => ({ ok: true })),
      {},
      { runId: 'r' },
    );
    expect(c).toMatchObject({ status: 'failed', errorCode: 'store_unavailable' });
    expect(c.reason).toContain('connect failed');
    expect(JSON.stringify(c)).not.toContain('hunter2');
  });

  it('has the secrets of a tool error taken out (a bearer token in a header)', async () => {
    const token = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';
    const c = await createRunner().run(
      action(async () => {
        throw new Error(`request failed: Authorization: Bearer ${token}`);
      }),
      {},
      { runId: 'r' },
    );
    expect(c.status).toBe('unknown');
    expect(c.reason).toContain('request failed');
    expect(JSON.stringify(c)).not.toContain(token);
  });
});
