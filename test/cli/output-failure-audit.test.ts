import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIO } from '../../src/cli/args.js';
import { main } from '../../src/cli/main.js';
import { compileSources } from '../support/compile.mjs';
import { resolveArgv, runCli } from './support.js';

// The bin's handling of its stdout only exists on plain Node, so the CLI runs as a child process from a
// transpiled copy of today's sources (the store modules are loaded by a variable specifier, so named here).
let out = '';
let dir = '';
let db = '';
beforeAll(async () => {
  out = await compileSources(
    ['src/cli/main.ts', 'src/sqlite/index.ts', 'src/sqlite/driver.ts'],
    'cli-output-failure',
  );
  dir = mkdtempSync(join(tmpdir(), 'readback-output-failure-'));
  db = join(dir, 'demo.db');
  expect((await runCli(['demo', '--store', db, '--json'])).code).toBe(0);
}, 60_000);
afterAll(() => {
  rmSync(out, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
});

/** Runs the bin with stdout on `/dev/full` (every write fails with ENOSPC), or piped to a reader of one chunk. */
function bin(args: string[], stdout: 'full' | 'head'): Promise<{ code: number | null; stderr: string }> {
  const full = stdout === 'full' ? openSync('/dev/full', 'w') : undefined;
  const child = spawn(process.execPath, [join(out, 'src/cli/main.js'), ...args], {
    stdio: ['ignore', full ?? 'pipe', 'pipe'],
  });
  if (full !== undefined) closeSync(full);
  // `| head -c 1`: the reader takes one chunk and goes away.
  child.stdout?.once('data', () => child.stdout?.destroy());
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

async function pendingId(): Promise<string> {
  const records = JSON.parse((await runCli(['ops', 'list', '--store', db, '--json'])).stdout) as {
    id: string;
    lifecycle: string;
  }[];
  return records.find((r) => r.lifecycle !== 'settled')!.id;
}

describe.runIf(existsSync('/dev/full'))('an output that cannot be written', () => {
  it('ops list > /dev/full: one line on stderr saying so, exit 1, no stack', async () => {
    for (const args of [
      ['ops', 'list', '--store', db],
      ['ops', 'list', '--store', db, '--json'],
    ]) {
      const r = await bin(args, 'full');
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        'readback: could not write the output (ENOSPC: no space left on device, write)\n',
      );
    }
  });

  it('ops resolve > /dev/full: says the decision was recorded, and it was', async () => {
    const id = await pendingId();
    const r = await bin(resolveArgv(id, db, 'failed', 'provider lost it', 'maria'), 'full');
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `readback: could not write the output (ENOSPC: no space left on device, write); the decision was recorded: ${id} is failed; see 'readback ops show ${id}'\n`,
    );
    const shown = JSON.parse((await runCli(['ops', 'show', id, '--store', db, '--json'])).stdout);
    expect(shown.record).toMatchObject({ lifecycle: 'settled', status: 'failed' });
  });

  it('a reader that goes away early (EPIPE) is still no error', async () => {
    const r = await bin(['demo', '--no-store'], 'head');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
});

describe('an output writer that throws (in-process)', () => {
  it('is one line naming the failure, and for ops resolve says the decision was recorded', async () => {
    await runCli(['demo', '--store', db, '--json']);
    const id = await pendingId();
    let stderr = '';
    const io: CliIO = {
      stdout: {
        write: () => {
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        },
      },
      stderr: {
        write: (chunk: string) => {
          stderr += chunk;
        },
      },
    };
    expect(await main(resolveArgv(id, db, 'verified', 'checked', 'maria'), io)).toBe(1);
    expect(stderr).toBe(
      `readback: could not write the output (ENOSPC: no space left on device, write); the decision was recorded: ${id} is verified; see 'readback ops show ${id}'\n`,
    );
  });
});
