import { execFile } from 'node:child_process';
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSources, repo } from '../support/compile.mjs';

const run = promisify(execFile);

// The examples import the built package (`../dist/...`). Here they run, unmodified, next to a `dist`
// that points at a transpiled copy of today's sources, so no build of the shared dist is needed.
const dist = {
  'index.js': 'src/index',
  'testing/index.js': 'src/testing/index',
  'ai-sdk/index.js': 'src/ai-sdk/index',
  'openai-agents/index.js': 'src/openai-agents/index',
};
let dir = '';

beforeAll(async () => {
  dir = await compileSources(
    Object.values(dist).map((entry) => `${entry}.ts`),
    'examples',
  );
  for (const [file, entry] of Object.entries(dist)) {
    const target = join(dir, 'dist', file);
    await mkdir(join(target, '..'), { recursive: true });
    const up = '../'.repeat(file.split('/').length);
    await writeFile(target, `export * from '${up}${entry}.js';\n`);
  }
  await mkdir(join(dir, 'examples'), { recursive: true });
  for (const example of ['openai-agents.mjs', 'ai-sdk.mjs']) {
    await copyFile(join(repo, 'examples', example), join(dir, 'examples', example));
  }
}, 60_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function runExample(name: string): Promise<string> {
  const { stdout } = await run(process.execPath, [join(dir, 'examples', name)], {
    env: { ...process.env, OPENAI_API_KEY: '' },
    timeout: 30_000,
  });
  return stdout;
}

describe('examples run offline and print what the model saw and the guarded answer', () => {
  for (const name of ['openai-agents.mjs', 'ai-sdk.mjs']) {
    it(name, async () => {
      const stdout = await runExample(name);
      expect(stdout).toContain('What the model saw');
      expect(stdout).toMatch(
        /update_ticket \{"id":"T-104","status":"resolved"\}\n\s+→ .*\[status: verified\]/,
      );
      expect(stdout).toMatch(/update_ticket \{"id":"T-105","status":"resolved"\}\n\s+→ .*\[status: no_op\]/);
      expect(stdout).toMatch(/send_email .*\n\s+→ .*\[status: failed, errorCode: provider_failed/);
      // The naive answer is rejected and replaced by one that states each status.
      expect(stdout).toMatch(
        /"sent" claims an effect of send_email on email:ana@example.com, but its status is failed/,
      );
      expect(stdout).toContain('1 of 3 actions verified; 1 needed no change, 1 failed.');
      expect(stdout).toContain('Ground truth: T-104 resolved, email dropped.');
      expect(stdout).not.toContain('unexpected guard verdicts');
    });
  }
});
