// Until src/sqlite/index.ts exists, the CLI tests point `openStore` at memory stores registered by path, so
// the commands are still exercised end to end. The test file itself must vi.mock '../../src/cli/store.js'
// with `openStore: vi.fn(real.openStore)` (vi.mock is hoisted only within the file that calls it).
import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { vi } from 'vitest';
import { openStore } from '../../src/cli/store.js';
import { memoryStore } from '../../src/store/memory.js';
import type { OperationStore } from '../../src/store/types.js';

/** Whether the SQLite store exists; when it does not, the stand-ins below take its place. */
export const HAS_SQLITE = existsSync(new URL('../../src/sqlite/index.ts', import.meta.url));

/**
 * Stores by path for the CLI tests: SQLite files when there is SQLite, else memory stand-ins whose close
 * (by the CLI) only calls `onClose`.
 */
export function storesByPath(onClose: () => void = () => {}) {
  const standIns = new Map<string, OperationStore>();
  return {
    /** A store at `path` for the test to fill; the CLI opening `path` later sees the same data. */
    async create(path: string): Promise<OperationStore> {
      if (HAS_SQLITE) {
        const { sqliteStore } = (await import(/* @vite-ignore */ '../../src/sqlite/index.js' as string)) as {
          sqliteStore(o: { path: string }): OperationStore | Promise<OperationStore>;
        };
        return sqliteStore({ path });
      }
      const inner = memoryStore();
      writeFileSync(path, '');
      // The CLI closes what it opens; the stand-in survives that so later commands see the same data.
      standIns.set(resolve(path), {
        ...inner,
        close: async () => {
          onClose();
        },
      });
      return inner;
    },
    /** Points the mocked `openStore` at the stand-ins (a no-op with SQLite); call it in beforeEach. */
    route(): void {
      if (HAS_SQLITE) return;
      vi.mocked(openStore).mockImplementation(async (spec, options) => {
        const standIn = standIns.get(resolve(spec));
        if (standIn) return standIn;
        const real = await vi.importActual<typeof import('../../src/cli/store.js')>('../../src/cli/store.js');
        return real.openStore(spec, options);
      });
    },
    /** Forgets the stand-ins; call it in afterEach. */
    clear(): void {
      standIns.clear();
    },
  };
}
