import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { openStore } from '../../src/cli/store.js';
import {
  DELIVER_NOTE_MODULE,
  deliverNoteAction,
  deliverNoteFolder,
  seedPendingNote,
} from './deliver-note.js';
import { storesByPath } from './stand-ins.js';
import { runCli } from './support.js';

const stores = storesByPath();

vi.mock('../../src/cli/store.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/cli/store.js')>();
  return { ...real, openStore: vi.fn(real.openStore) };
});

const action = deliverNoteAction;
const MODULE = DELIVER_NOTE_MODULE;

const paths = deliverNoteFolder('readback-reconcile-module-', stores);

const seed = () => seedPendingNote(paths.modulePath, () => stores.create(paths.db));

async function status(id: string): Promise<string> {
  const { stdout } = await runCli(['ops', 'show', id, '--store', paths.db, '--json']);
  return JSON.parse(stdout).record.status;
}

const reconcile = (actions: string) =>
  runCli(['reconcile', '--store', paths.db, '--actions', actions, '--once']);

describe('readback reconcile --actions: ways of naming the module', () => {
  it('takes a file: URL (as import.meta.url gives one), even of a path with spaces', async () => {
    const spaced = join(paths.dir, 'my actions', 'actions.mjs');
    mkdirSync(join(paths.dir, 'my actions'));
    writeFileSync(spaced, MODULE);
    const id = await seed();
    const url = pathToFileURL(spaced).href;
    expect(url).toContain('%20');
    const r = await reconcile(url);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(await status(id)).toBe('verified');
  });

  it('expands a leading ~ to the home directory, as --store does (`--actions=~/…` reaches it unexpanded)', async () => {
    vi.stubEnv('HOME', paths.dir);
    vi.stubEnv('USERPROFILE', paths.dir);
    const id = await seed();
    const r = await runCli(['reconcile', '--store', paths.db, '--actions=~/actions.mjs', '--once']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(await status(id)).toBe('verified');
  });

  it('refuses an empty path in so many words, not as "a directory"', async () => {
    const id = await seed();
    const r = await reconcile('');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('readback: actions module path is empty; name the module file\n');
    expect(await status(id)).toBe('pending');
  });

  it('says a package name is not looked up, and what to give instead', async () => {
    await seed();
    for (const name of ['my-actions', '@acme/actions', '@acme/actions/billing']) {
      const r = await reconcile(name);
      expect(r.code, name).toBe(2);
      expect(r.stderr).toContain(
        `actions module not found: ${name} (a package name is not looked up: give the path to its module file`,
      );
    }
    // A path or a file name that names nothing gets no such hint.
    for (const name of ['./nope.mjs', 'nope.js']) {
      const missing = await reconcile(name);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain(`actions module not found: ${name}\n`);
    }
  });
});

describe('readback reconcile --actions: a module with two actions of one name', () => {
  it('is a usage error naming the name and both exports, before the store is touched', async () => {
    const id = await seed();
    const twice = join(paths.dir, 'twice.mjs');
    writeFileSync(
      twice,
      `${MODULE}export const tools = { billing: [${action('deliver_note', 'Another note sender.')}] };\n`,
    );
    vi.mocked(openStore).mockClear();
    const r = await reconcile(twice);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `readback: actions module ${twice} exports two different actions named "deliver_note" (deliverNote and tools.billing[0]); give each its own name\n`,
    );
    expect(vi.mocked(openStore)).not.toHaveBeenCalled();
    expect(await status(id)).toBe('pending');
  });
});
