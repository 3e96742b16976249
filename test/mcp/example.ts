import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { compileSources, repo } from '../support/compile.mjs';

/** The readback entry points the example server imports by the package's name. */
const entries = { '.': 'src/index', './mcp': 'src/mcp/index', './testing': 'src/testing/index' };

/**
 * Copies examples/mcp-server.mjs, unmodified, next to a transpiled copy of the current sources, with a
 * `readback` package that points at them, so the child process runs today's src without a build of dist
 * (which other work in the tree may be rewriting) and still imports readback by its own name.
 */
export async function prepareExampleServer(): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const dir = await compileSources(
    Object.values(entries).map((entry) => `${entry}.ts`),
    'mcp-example',
  );
  const pkg = join(dir, 'node_modules', 'readback');
  await mkdir(pkg, { recursive: true });
  const exportsMap: Record<string, string> = {};
  for (const [subpath, entry] of Object.entries(entries)) {
    const file = `./${subpath === '.' ? 'index' : subpath.slice(2)}.js`;
    exportsMap[subpath] = file;
    await writeFile(join(pkg, file), `export * from '../../${entry}.js';\n`);
  }
  await writeFile(
    join(pkg, 'package.json'),
    `${JSON.stringify({ name: 'readback', type: 'module', exports: exportsMap }, null, 2)}\n`,
  );
  const path = join(dir, 'examples', 'mcp-server.mjs');
  await mkdir(join(dir, 'examples'), { recursive: true });
  await copyFile(join(repo, 'examples', 'mcp-server.mjs'), path);
  return { path, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export { repo };
