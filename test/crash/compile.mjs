// Transpiles the crash-test child (test/crash/child.ts) and everything it imports from src into plain
// ESM under node_modules/.cache, so children run the current sources with plain node, and Node's
// resolution still finds better-sqlite3. Same approach as test/fixtures/sqlite/compile.mjs.
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const IMPORT = /(?:from\s+|import\s*\(\s*)'(\.{1,2}\/[^']+\.js)'/g;

/** Compiles test/crash/child.ts and its relative imports; resolves to the compiled child's path. */
export async function compileCrashChild() {
  const cache = join(repo, 'node_modules', '.cache');
  await mkdir(cache, { recursive: true });
  const out = await mkdtemp(join(cache, 'readback-crash-'));
  await writeFile(join(out, 'package.json'), '{ "type": "module" }\n');
  const entry = join(repo, 'test', 'crash', 'child.ts');
  const pending = [entry];
  const done = new Set();
  while (pending.length > 0) {
    const file = pending.pop();
    if (done.has(file)) continue;
    done.add(file);
    const source = await readFile(file, 'utf8');
    const { outputText } = ts.transpileModule(source, {
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
  return { child: join(out, 'test', 'crash', 'child.js'), dir: out };
}
