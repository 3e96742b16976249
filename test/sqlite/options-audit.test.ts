// A misspelt option used to be dropped in silence: `{ busyTimeout: 60000 }` left the 5 s default in place, and
// `{ durable: 'normal' }` left FULL, with nothing to say the setting never took.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';

const dir = mkdtempSync(join(tmpdir(), 'readback-sqlite-options-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('sqliteStore options', () => {
  it('refuses an option it does not know, naming it and the one meant', async () => {
    const path = join(dir, 'a.db');
    await expect(sqliteStore({ path }, { busyTimeout: 60_000 } as never)).rejects.toMatchObject({
      code: 'invalid_options',
      field: 'busyTimeout',
      message: expect.stringMatching(/did you mean "busyTimeoutMs"/),
    });
    await expect(sqliteStore({ path }, { durable: 'normal' } as never)).rejects.toMatchObject({
      field: 'durable',
    });
  });

  it('still opens with the options it knows', async () => {
    const store = await sqliteStore(
      { path: join(dir, 'b.db') },
      { durability: 'normal', busyTimeoutMs: 100 },
    );
    await store.close();
  });
});
