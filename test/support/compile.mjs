// Transpiles TypeScript entries of this repo and everything they import (relative imports only) into plain
// ESM under node_modules/.cache, so child processes run the current sources with plain `node`, and Node's
// resolution from there still finds the repo's dependencies (better-sqlite3, pg).
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The repository root. */
export const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const IMPORT = /(?:from\s+|import\s*\(\s*)'(\.{1,2}\/[^']+\.js)'/g;

/** Compiles `entries` (paths relative to the repo) and their imports; resolves to the output folder. */
export async function compileSources(entries, tag) {
  const cache = join(repo, 'node_modules', '.cache');
  await mkdir(cache, { recursive: true });
  const out = await mkdtemp(join(cache, `readback-${tag}-`));
  await writeFile(join(out, 'package.json'), '{ "type": "module" }\n');
  const pending = entries.map((entry) => join(repo, entry));
  const done = new Set();
  while (pending.length > 0) {
    const file = pending.pop();
    if (done.has(file)) continue;
    done.add(file);
    const { outputText } = ts.transpileModule(await readFile(file, 'utf8'), {
      fileName: file,
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
      },
    });
    const target = join(out, relative(repo, file)).replace(/\.ts$/, '.js');
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, outputText);
    for (const [, spec] of outputText.matchAll(IMPORT)) {
      pending.push(resolve(dirname(file), spec).replace(/\.js$/, '.ts'));
    }
  }
  return out;
}
