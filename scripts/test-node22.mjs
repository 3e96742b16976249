// The whole test suite under Node 22 (`npm run test:node22`): the project runs on Node 20, and this checks the
// newer Node users also run. A clone of the committed tree (HEAD, as CI sees it) gets its own `npm ci` under Node 22,
// which builds better-sqlite3 against Node 22's headers (no download from nodejs.org), then `vitest run`. Node 22
// itself comes from the npm registry (test/support/node22.mjs). Exits with the tests' exit code.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { repo } from '../test/support/compile.mjs';
import { fetchNode22 } from '../test/support/node22.mjs';

const node22 = await fetchNode22();
if ('why' in node22) {
  console.error(`test:node22: ${node22.why}`);
  process.exit(1);
}
const clone = mkdtempSync(join(tmpdir(), 'readback-node22-'));
const env = {
  ...process.env,
  PATH: `${dirname(node22.bin)}:${process.env.PATH}`,
  npm_config_nodedir: node22.home,
};
const step = (command, args, cwd = clone) => {
  console.log(`test:node22: ${command} ${args.join(' ')}`);
  const { status } = spawnSync(command, args, { cwd, env, stdio: 'inherit' });
  return status ?? 1;
};
let code = 1;
try {
  code =
    step('git', ['clone', '--quiet', repo, clone], repo) ||
    step('node', ['--version']) ||
    step('npm', ['ci', '--no-audit', '--no-fund']) ||
    step('npx', ['vitest', 'run']);
} finally {
  rmSync(clone, { recursive: true, force: true });
}
process.exit(code);
