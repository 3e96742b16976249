// The actions module the reconcile CLI tests load: an accepted-mode `deliver_note` whose provider always reports
// the note delivered, so a reconcile that runs settles a seeded operation and one refused leaves it pending.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, expect, vi } from 'vitest';
import type { Action } from '../../src/contract/types.js';
import { createRunner } from '../../src/runner/runner.js';
import type { OperationStore } from '../../src/store/types.js';

const SRC = (file: string) => pathToFileURL(resolve(import.meta.dirname, '../../src', file)).href;

/** The source of one `defineAction({...})` call of the note action, under `name`. */
export const deliverNoteAction = (name: string, description = 'Deliver a note.') => `defineAction({
  name: ${JSON.stringify(name)},
  description: ${JSON.stringify(description)},
  input: schema({ to: 'string' }),
  target: (input) => 'note:' + input.to,
  mode: 'accepted',
  postcondition: 'The provider reports the note delivered.',
  execute: (input) => accepted('job-' + input.to),
  observe: (input) => ({ to: input.to, status: 'delivered' }),
  terminal: () => 'succeeded',
  expect: () => ({ status: 'delivered' }),
  safeToRepeat: true,
  poll: { initialDelayMs: 1, maxDelayMs: 1, jitter: 0, maxDurationMs: 600000, maxReads: 5 },
})`;

/** The module's imports, from this checkout's sources. */
export const DELIVER_NOTE_HEADER = `import { accepted, defineAction } from ${JSON.stringify(SRC('index.ts'))};
import { schema } from ${JSON.stringify(SRC('testing/schema.ts'))};
`;

/** A whole module exporting `deliverNote`. */
export const DELIVER_NOTE_MODULE = `${DELIVER_NOTE_HEADER}export const deliverNote = ${deliverNoteAction('deliver_note')};\n`;

/** Seeds one pending operation of deliver_note (loaded from `modulePath`) into the store `open` gives; its id. */
export async function seedPendingNote(
  modulePath: string,
  open: () => Promise<OperationStore>,
): Promise<string> {
  const mod = (await import(pathToFileURL(modulePath).href)) as { deliverNote: Action };
  const store = await open();
  const runner = createRunner({ store, actions: [mod.deliverNote] });
  const c = await runner.run(mod.deliverNote, { to: 'ann' }, { runId: 'seed', wait: false });
  expect(c.status).toBe('pending');
  await store.close();
  await new Promise((r) => setTimeout(r, 20));
  return c.operationId;
}

/**
 * Per test, a fresh folder holding the actions module (`modulePath`) and a store path (`db`), with the CLI's stores
 * routed to `stores`; removed after the test, with any stubbed environment. The paths change per test: read them
 * from the returned object.
 */
export function deliverNoteFolder(prefix: string, stores: { route(): void; clear(): void }) {
  const paths = { dir: '', db: '', modulePath: '' };
  beforeEach(() => {
    paths.dir = mkdtempSync(join(tmpdir(), prefix));
    paths.db = join(paths.dir, 'ops.db');
    paths.modulePath = join(paths.dir, 'actions.mjs');
    writeFileSync(paths.modulePath, DELIVER_NOTE_MODULE);
    stores.route();
  });
  afterEach(() => {
    stores.clear();
    vi.unstubAllEnvs();
    rmSync(paths.dir, { recursive: true, force: true });
  });
  return paths;
}
