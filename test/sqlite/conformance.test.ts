import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteStore } from '../../src/sqlite/index.js';
import { storeConformance } from '../../src/testing/store-conformance.js';
import { type Handle, openHandle, tempDir } from '../fixtures/sqlite/support.js';

const tmp = tempDir('conformance');
afterAll(tmp.remove);

describe('sqliteStore({ path }) conformance', () => {
  let n = 0;
  // Each case gets its own fresh file (in a directory that does not exist yet), so no case sees another's records.
  const cases = storeConformance(() => sqliteStore({ path: join(tmp.dir, `case-${++n}`, 'ops.db') }));
  for (const c of cases) it(c.name, c.run);
});

describe('sqliteStore({ database }) conformance', () => {
  let handle: Handle | undefined;
  const cases = storeConformance(async () => {
    handle = await openHandle();
    return sqliteStore({ database: handle });
  });
  for (const c of cases) {
    it(c.name, async () => {
      await c.run();
      // The suite closed the store; the caller's handle must still be open and usable.
      expect(handle!.open).toBe(true);
      expect(handle!.prepare('SELECT COUNT(*) AS n FROM readback_operations').get()).toEqual({
        n: expect.any(Number),
      });
      handle!.close();
    });
  }
});

// A driver that can only hand back rows as objects (node:sqlite before Node 24 has no setReturnArrays): the
// store reads its rows by column name instead, and must keep every record field.
describe('sqliteStore({ database }) conformance, a handle whose rows are objects only', () => {
  let handle: Handle | undefined;
  const cases = storeConformance(async () => {
    const opened = await openHandle();
    handle = opened;
    const objectRowsOnly = {
      prepare(sql: string) {
        const statement = opened.prepare(sql);
        return {
          run: (...params: unknown[]) => statement.run(...params),
          get: (...params: unknown[]) => statement.get(...params),
          all: (...params: unknown[]) => statement.all(...params),
        };
      },
      exec: (sql: string) => opened.exec(sql),
      close: () => opened.close(),
      get inTransaction() {
        return opened.inTransaction;
      },
      get open() {
        return opened.open;
      },
    };
    return sqliteStore({ database: objectRowsOnly });
  });
  for (const c of cases) {
    it(c.name, async () => {
      await c.run();
      handle!.close();
    });
  }
});
