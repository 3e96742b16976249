// The crash-test child (test/crash/child.ts) compiled with everything it imports from src, so children run
// the current sources with plain node.
import { join } from 'node:path';
import { compileSources } from '../support/compile.mjs';

/** Compiles test/crash/child.ts and its relative imports; resolves to the compiled child's path. */
export async function compileCrashChild() {
  const dir = await compileSources(['test/crash/child.ts'], 'crash');
  return { child: join(dir, 'test', 'crash', 'child.js'), dir };
}
