// A private, throw-away Postgres cluster for tests that must restart the server: the shared one on 5432
// is used by other suites at the same time. Needs initdb and pg_ctl (READBACK_PG_BIN, or the newest
// /usr/lib/postgresql/*/bin). Postgres refuses to run as root, so as root the binaries run as the
// `postgres` OS user in a temporary directory that user owns.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A running private cluster. */
export interface PrivateCluster {
  url: string;
  /** `pg_ctl restart -m fast`: every connection is closed, and the server comes back on the same port. */
  restart(): Promise<void>;
  /** Stops the server and removes its directory. */
  destroy(): Promise<void>;
}

/** The directory holding initdb and pg_ctl, or undefined when there is none. */
export function postgresBin(): string | undefined {
  if (process.env.READBACK_PG_BIN) return process.env.READBACK_PG_BIN;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

/**
 * Whether a private cluster can be started. Under CI=true a missing binary is an error; locally the
 * test skips with a message saying how to provide one.
 */
export function clusterAvailable(): boolean {
  if (postgresBin() !== undefined) return true;
  const why =
    'no initdb/pg_ctl found (set READBACK_PG_BIN to a PostgreSQL bin directory, e.g. /usr/lib/postgresql/16/bin)';
  if (process.env.CI === 'true') throw new Error(`${why}; under CI=true the Postgres restart test must run`);
  console.warn(`[readback] skipping the Postgres restart test: ${why}`);
  return false;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts a fresh cluster on a free port (trust auth, user postgres, database postgres). */
export async function startPrivateCluster(): Promise<PrivateCluster> {
  const bin = postgresBin();
  if (bin === undefined) throw new Error('no PostgreSQL binaries found');
  const asRoot = process.getuid?.() === 0;
  const dir = await mkdtemp(join(tmpdir(), 'readback-pg-'));
  const data = join(dir, 'data');
  const exec = (tool: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]) : run(join(bin, tool), args);
  try {
    if (asRoot) {
      const { stdout } = await run('id', ['-u', 'postgres']);
      const { stdout: gid } = await run('id', ['-g', 'postgres']);
      await chown(dir, Number(stdout.trim()), Number(gid.trim()));
    }
    await exec('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    const port = await freePort();
    // The socket goes in our directory; fsync off because this cluster is thrown away.
    const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60`;
    await exec('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
    return {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      async restart() {
        // pg_ctl restart reuses the options the server was started with (postmaster.opts).
        await exec('pg_ctl', ['-D', data, '-m', 'fast', '-l', join(dir, 'log'), '-w', 'restart']);
      },
      async destroy() {
        await exec('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await exec('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
