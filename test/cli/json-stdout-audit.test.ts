import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSources } from '../support/compile.mjs';

const run = promisify(execFile);

// The bin's own wiring (what `process.stdout` carries) only exists on plain Node, so the CLI runs here as a
// child process from a transpiled copy of today's sources.
let out = '';
let dir = '';
beforeAll(async () => {
  out = await compileSources(['src/cli/main.ts', 'src/testing/schema.ts'], 'cli-json-stdout');
  dir = mkdtempSync(join(tmpdir(), 'readback-json-stdout-'));
}, 60_000);
afterAll(() => {
  rmSync(out, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(process.execPath, [join(out, 'src/cli/main.js'), ...args]).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );
}

// An actions module that talks while it loads, as real ones do ("connected to ..."), through console.log
// and straight through process.stdout.
function chattyModule(withAction: boolean): string {
  const path = join(dir, `chatty-${withAction}.mjs`);
  const define = pathToFileURL(join(out, 'src/contract/define.js')).href;
  const schema = pathToFileURL(join(out, 'src/testing/schema.js')).href;
  writeFileSync(
    path,
    [
      `import { defineAction } from '${define}';`,
      `import { schema } from '${schema}';`,
      "console.log('connected to the helpdesk');",
      "process.stdout.write('pool ready\\n');",
      withAction
        ? `export const note = defineAction({ name: 'add_note', description: 'Add a note.', input: schema({ id: 'string' }),
  target: ({ id }) => 'note:' + id, postcondition: 'The note reads back.', execute: () => ({ ok: true }), observe: () => null, expect: () => ({}) });`
        : 'export const nothing = 1;',
      '',
    ].join('\n'),
  );
  return path;
}

describe('the bin under --json: stdout carries only the document', () => {
  it('an audit of a module that logs while loading prints parseable JSON; the logs go to stderr', async () => {
    const r = await cli(['audit', chattyModule(true), '--json']);
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stdout).tools.map((t: { action: string }) => t.action)).toEqual(['add_note']);
    expect(r.stderr).toBe('connected to the helpdesk\npool ready\n');
  });

  it('so does the error document when the module exports no actions', async () => {
    const r = await cli(['audit', chattyModule(false), '--json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error.message).toMatch(/exports no actions/);
    expect(r.stderr).toMatch(/^connected to the helpdesk\npool ready\nreadback: actions module /);
  });

  it('leaves the text mode alone: the logs stay on stdout before the report', async () => {
    const r = await cli(['audit', chattyModule(true)]);
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(/^connected to the helpdesk\npool ready\n/);
    expect(r.stderr).toBe('');
  });
});
