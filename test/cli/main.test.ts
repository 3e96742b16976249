import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli, stripAnsi, widest } from './support.js';

const HEADERS = ['tool', 'tool returned', 'naive agent would say', 'readback status', 'allowed message'];

describe('readback demo (in-process)', () => {
  it('prints the table, the honest summary, the guard verdicts and the gap', async () => {
    const { code, stdout, stderr } = await runCli(['demo', '--no-store']);
    expect(code).toBe(0);
    expect(stderr).toBe('');
    const header = stdout.split('\n').find((line) => line.startsWith('│ tool '));
    expect(header?.split('│').map((cell) => cell.trim())).toEqual(['', ...HEADERS, '']);
    expect(stdout).toContain('3 of 9 actions verified;');
    expect(stdout).toMatch(/naive answer rejected, \d+ violations:/);
    expect(stdout).toContain('honest summary accepted, 0 violations');
    expect(stdout).toContain('naive agent claimed success for 8 of 9 calls; readback verified 3.');
  });

  it('fits 120 columns and uses no color when stdout is not a terminal', async () => {
    const { stdout } = await runCli(['demo', '--no-store']);
    expect(stdout).toBe(stripAnsi(stdout));
    expect(widest(stdout)).toBeLessThanOrEqual(120);
  });

  it('colors statuses on a terminal and fits its width', async () => {
    for (const columns of [60, 80, 100, 160]) {
      const { stdout } = await runCli(['demo', '--no-store'], { tty: columns });
      expect(stdout).toContain('\u001b[32mverified');
      expect(widest(stdout)).toBeLessThanOrEqual(columns);
    }
  });

  it('honors --no-color and NO_COLOR on a terminal', async () => {
    const flag = await runCli(['demo', '--no-store', '--no-color'], { tty: 100 });
    expect(flag.stdout).toBe(stripAnsi(flag.stdout));
    const env = await runCli(['demo', '--no-store'], { tty: 100, env: { NO_COLOR: '1' } });
    expect(env.stdout).toBe(stripAnsi(env.stdout));
  });

  it('--json prints one document with one completion per call and nothing else', async () => {
    const { code, stdout, stderr } = await runCli(['demo', '--no-store', '--json'], { tty: 100 });
    expect(code).toBe(0);
    expect(stderr).toBe('');
    const doc = JSON.parse(stdout);
    expect(Object.keys(doc)).toEqual(['completions', 'naive', 'guard', 'store']);
    expect(doc.store).toBeNull();
    expect(doc.completions).toHaveLength(9);
    expect(doc.naive).toHaveLength(9);
    expect(doc.completions.map((c: { status: string }) => c.status)).toEqual([
      'verified',
      'no_op',
      'verified',
      'failed',
      'verified',
      'failed',
      'partial',
      'pending',
      'unknown',
    ]);
    expect(doc.naive[4]).toMatchObject({ tool: 'refund_order', toolReturned: { threw: expect.any(String) } });
    expect(doc.guard.naive.ok).toBe(false);
    expect(doc.guard.honest.ok).toBe(true);
    expect(doc.guard.gap).toEqual({ calls: 9, naiveClaimedSuccess: 8, verified: 3, naiveCalledFailed: 1 });
  });
});

describe('readback command line', () => {
  it('--help, -h and help print usage and exit 0', async () => {
    for (const argv of [['--help'], ['-h'], ['help']]) {
      const { code, stdout, stderr } = await runCli(argv);
      expect(code).toBe(0);
      expect(stderr).toBe('');
      expect(stdout).toContain('usage: readback <command> [options]');
      expect(stdout).toMatch(/^\s+demo\s+/m);
    }
  });

  it('help for one command lists its options', async () => {
    for (const argv of [
      ['help', 'demo'],
      ['demo', '--help'],
      ['demo', '-h'],
    ]) {
      const { code, stdout } = await runCli(argv);
      expect(code).toBe(0);
      expect(stdout).toContain('usage: readback demo [--json] [--no-color]');
      expect(stdout).toContain('--json');
      expect(stdout).toContain('--no-color');
    }
  });

  it('--version prints the version from package.json', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    for (const flag of ['--version', '-V']) {
      const { code, stdout } = await runCli([flag]);
      expect(code).toBe(0);
      expect(stdout).toBe(`${version}\n`);
    }
  });

  it.each([
    [['frob'], "readback: unknown command 'frob'"],
    [['help', 'frob'], "readback: unknown command 'frob'"],
    [['demo', '--frob'], "readback: unknown option '--frob' for 'readback demo'"],
    [['demo', '-x'], "readback: unknown option '-x' for 'readback demo'"],
    [['demo', '--json=yes'], "readback: option '--json' takes no value"],
    [['demo', 'extra'], "readback: unexpected argument 'extra' for 'readback demo'"],
    [['demo', '--store', 'a.db', '--no-store'], "readback: give either '--store' or '--no-store', not both"],
    [
      ['ops', 'resolve', 'op-1', '--status', 'failed', '--note', 'a', '--by', 'me', '--note', 'b'],
      "readback: option '--note' is given more than once",
    ],
    [
      ['ops', 'list', '--store', 'a.db', '--store=b.db'],
      "readback: option '--store' is given more than once",
    ],
    [['--frob'], "readback: unknown option '--frob'"],
    [[], 'readback: missing command'],
  ])('%j is a usage error: exit 2, one line naming it, then a usage hint', async (argv, message) => {
    const { code, stdout, stderr } = await runCli(argv);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    const lines = stderr.trimEnd().split('\n');
    expect(lines[0]).toBe(message);
    expect(lines[1]).toMatch(/^usage: readback <command> \[options\]/);
    expect(lines).toHaveLength(2);
  });
});
