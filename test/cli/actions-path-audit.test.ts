import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from './support.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('an actions module path that names a directory', () => {
  it('is a usage mistake (exit 2) that says to name the module file, for audit and reconcile alike', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'readback-actions-dir-'));
    dirs.push(dir);
    for (const argv of [
      ['audit', dir],
      ['reconcile', '--store', join(dir, 'ops.db'), '--actions', dir, '--once'],
    ]) {
      const r = await runCli(argv);
      expect(r.code, argv.join(' ')).toBe(2);
      expect(r.stderr).toContain(`actions module ${dir} is a directory; name the module file`);
    }
  });
});
