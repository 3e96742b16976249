import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunner, defineAction } from '../../src/index.js';
import { sqliteStore } from '../../src/sqlite/index.js';

const dir = mkdtempSync(join(tmpdir(), 'readback-unstorable-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A call whose target holds an unpaired surrogate, which SQLite text would turn into a replacement character.
function flagAction(shadow: boolean) {
  const state = { executed: 0 };
  const action = defineAction({
    name: 'set_flag',
    description: 'Sets a flag.',
    postcondition: 'The flag is set.',
    input: { '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => ({ value }) } },
    target: (i: { id: string }) => `flag:${i.id}`,
    execute: async () => {
      state.executed++;
      return { ok: true };
    },
    observe: async () => ({ set: state.executed > 0 }),
    expect: () => ({ set: true }),
    shadow,
  });
  return { action, state };
}

describe('a call the store cannot keep as given', () => {
  it('fails as invalid_input with repair as the next step, nothing executed or recorded', async () => {
    const store = await sqliteStore({ path: join(dir, 'a.db') });
    const { action, state } = flagAction(false);
    const c = await createRunner({ store }).run(action, { id: 'x\ud800' }, { runId: 'r' });
    expect(c).toMatchObject({ status: 'failed', errorCode: 'invalid_input', nextAllowedAction: 'repair' });
    expect(c.reason).toContain('unpaired UTF-16 surrogate');
    expect(state.executed).toBe(0);
    expect(await store.list({})).toEqual([]);
    await store.close();
  });

  it('in shadow mode still runs the live tool, without a record', async () => {
    const store = await sqliteStore({ path: join(dir, 'b.db') });
    const { action, state } = flagAction(true);
    const out = await createRunner({ store }).shadow(action, { id: 'x\ud800' }, { runId: 'r' });
    expect(state.executed).toBe(1);
    expect(out).toMatchObject({ executed: true, result: { ok: true } });
    expect(out.completion).toMatchObject({ status: 'unknown', errorCode: 'store_unavailable' });
    await store.close();
  });
});
