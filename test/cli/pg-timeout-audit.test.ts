import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_CONNECT_TIMEOUT_MS } from '../../src/cli/store.js';
import { runCli } from './support.js';

// A host that accepts the TCP connection and never answers: a firewall, a wrong port, a stopped VM.
let server: Server;
let port: number;
const sockets = new Set<Socket>();
beforeAll(async () => {
  server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => server.close(resolve));
});

async function timed(argv: string[]) {
  const started = Date.now();
  const r = await runCli(argv);
  return { ...r, ms: Date.now() - started };
}

describe('a Postgres store that never answers', () => {
  it('fails ops list --json within the connect timeout, with a JSON error and no password', async () => {
    const r = await timed([
      'ops',
      'list',
      '--store',
      `postgres://ops:hunter2@127.0.0.1:${port}/app`,
      '--json',
    ]);
    expect(r.code).toBe(1);
    expect(r.ms).toBeLessThan(PG_CONNECT_TIMEOUT_MS + 3_000);
    const e = JSON.parse(r.stdout).error;
    expect(e.kind).toBe('failed');
    expect(e.message).toMatch(
      /^could not open store postgres:\/\/ops:\*\*\*@127\.0\.0\.1:\d+\/app: .*timeout/,
    );
    expect(e.message).toContain('?connect_timeout=SECONDS');
    expect(r.stdout + r.stderr).not.toContain('hunter2');
  }, 15_000);

  it('honors ?connect_timeout= (seconds, as libpq) for review and ops show too', async () => {
    const spec = `postgres://ops@127.0.0.1:${port}/app?connect_timeout=1`;
    for (const argv of [
      ['review', '--store', spec, '--run', 'r-1'],
      ['ops', 'show', 'op-1', '--store', spec],
    ]) {
      const r = await timed(argv);
      expect(r.code, argv.join(' ')).toBe(1);
      expect(r.ms, argv.join(' ')).toBeLessThan(3_000);
      expect(r.stderr).toMatch(/no answer within 1 s/);
    }
  }, 15_000);
});
