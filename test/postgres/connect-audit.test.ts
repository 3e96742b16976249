// A pool readback opens itself from a connection string: pg waits forever for a connection by default, so a
// host that accepts TCP and never answers (a firewall, a stopped VM, a wrong port behind a proxy) held
// postgresStore() without end, and the errors it did give named no server.
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONNECTION_TIMEOUT_MS, loadPgPool, serverOf } from '../../src/postgres/driver.js';
import { postgresStore } from '../../src/postgres/index.js';

let silent: Server;
let port = 0;
const sockets = new Set<Socket>();

beforeAll(async () => {
  // Accepts every connection and never says a word, as a black-holing middlebox does.
  silent = createServer((socket) => {
    // Reads what pg sends (so a close from its side is seen) and never answers.
    socket.resume();
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  port = (silent.address() as { port: number }).port;
});
afterAll(async () => {
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => silent.close(() => resolve()));
});

async function opening(source: Parameters<typeof postgresStore>[0]) {
  const started = Date.now();
  const error = await postgresStore(source).then(
    async (store) => {
      await store.close();
      return undefined;
    },
    (e: unknown) => e as Error & { code?: string },
  );
  return { error, ms: Date.now() - started };
}

describe('opening a store on a server that does not answer', () => {
  it('gives up after connectionTimeoutMillis and names the server, never the password', async () => {
    const { error, ms } = await opening({
      connectionString: `postgres://ops:hunter2@127.0.0.1:${port}/ledger`,
      connectionTimeoutMillis: 300,
      reconnect: false,
    });
    expect(error).toMatchObject({ name: 'ReadbackError', code: 'invalid_options' });
    expect(error?.message).toContain(`127.0.0.1:${port}`);
    expect(error?.message).toContain('database ledger');
    expect(error?.message).toContain('300 ms');
    expect(error?.message).not.toContain('hunter2');
    expect(ms).toBeLessThan(5_000);
    // The pool readback opened is ended: no connection to the silent server is left open.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(sockets.size).toBe(0);
  });

  it("takes the URL's connect_timeout (seconds) when no option is given", async () => {
    const { error, ms } = await opening({
      connectionString: `postgres://ops@127.0.0.1:${port}/ledger?connect_timeout=1`,
    });
    expect(error?.message).toContain('1000 ms');
    expect(ms).toBeGreaterThanOrEqual(900);
    expect(ms).toBeLessThan(6_000);
  });

  it(`waits ${DEFAULT_CONNECTION_TIMEOUT_MS} ms by default, not forever`, async () => {
    const { error, ms } = await opening({ connectionString: `postgres://ops@127.0.0.1:${port}/ledger` });
    expect(error?.message).toContain(`127.0.0.1:${port}`);
    expect(ms).toBeGreaterThanOrEqual(DEFAULT_CONNECTION_TIMEOUT_MS - 100);
    expect(ms).toBeLessThan(DEFAULT_CONNECTION_TIMEOUT_MS + 5_000);
  }, 30_000);

  it('every pool loadPgPool makes (the CLI uses it too) has the default unless told otherwise', async () => {
    const Pool = await loadPgPool();
    const timed = new Pool({ connectionString: `postgres://127.0.0.1:${port}/x` });
    const forever = new Pool({
      connectionString: `postgres://127.0.0.1:${port}/x`,
      connectionTimeoutMillis: 0,
    });
    const options = (pool: unknown) => (pool as { options: { connectionTimeoutMillis?: number } }).options;
    expect(options(timed).connectionTimeoutMillis).toBe(DEFAULT_CONNECTION_TIMEOUT_MS);
    expect(options(forever).connectionTimeoutMillis).toBe(0);
    await Promise.all([timed.end(), forever.end()]);
  });

  it('a port nothing listens on is refused at once, naming the server', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const free = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { error, ms } = await opening({
      connectionString: `postgres://ops:hunter2@127.0.0.1:${free}/ledger`,
    });
    expect(error).toMatchObject({ code: 'invalid_options' });
    expect(error?.message).toContain(`the PostgreSQL server at 127.0.0.1:${free} (database ledger)`);
    expect(error?.message).not.toContain('hunter2');
    expect(ms).toBeLessThan(3_000);
  });

  it('a non-routable address gives up within the timeout', async () => {
    const { error, ms } = await opening({
      connectionString: 'postgres://ops:hunter2@10.255.255.1:5432/ledger',
      connectionTimeoutMillis: 500,
    });
    expect(error).toMatchObject({ code: 'invalid_options' });
    expect(error?.message).toContain('10.255.255.1:5432');
    expect(error?.message).not.toContain('hunter2');
    expect(ms).toBeLessThan(3_000);
  });

  it('refuses a timeout that is not a whole number of milliseconds, before connecting', async () => {
    for (const connectionTimeoutMillis of [-1, 1.5, '100', Number.NaN]) {
      await expect(
        postgresStore({ connectionString: 'postgres://127.0.0.1:1/x', connectionTimeoutMillis } as never),
      ).rejects.toMatchObject({ code: 'invalid_options', field: 'connectionTimeoutMillis' });
    }
  });

  it('names sockets and hosts given as a query parameter, and never a user or password', () => {
    expect(serverOf('postgres://u:pw@db.internal:6432/app')).toBe(
      'the PostgreSQL server at db.internal:6432 (database app)',
    );
    expect(serverOf('postgres://u:pw@/app?host=/var/run/postgresql')).toBe(
      'the PostgreSQL server at /var/run/postgresql (database app)',
    );
    expect(serverOf('/var/run/postgresql app')).toBe('the PostgreSQL socket /var/run/postgresql');
    expect(serverOf('postgresql://u:pw@[::1]/x')).toBe('the PostgreSQL server at [::1]:5432 (database x)');
  });
});
