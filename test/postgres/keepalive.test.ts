// A connection whose server vanishes without closing it (a partition, a host that died) never errors by itself:
// without TCP keepalive a statement on it waits forever, and so does the reconciler that sent it. Every pool
// readback opens must have keepalive armed on its connections; a pool the caller passes is left as it is.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { KEEPALIVE_DELAY_MS } from '../../src/postgres/driver.js';
import { postgresStore } from '../../src/postgres/index.js';
import { ev, newOp } from '../../src/testing/conformance/support.js';
import { PG_URL, pgSuite } from './support.js';

const { available, tempSchema, tempPool } = await pgSuite();

/** This process's established TCP connections to the server's port, as `ss` lists them (with their timers). */
function connectionsToServer(): string[] {
  const port = new URL(PG_URL).port || '5432';
  const out = execFileSync('ss', ['-tnopH', 'state', 'established', `( dport = :${port} )`], {
    encoding: 'utf8',
  });
  return out.split('\n').filter((line) => line.includes(`pid=${process.pid},`));
}

const hasSs = (() => {
  try {
    execFileSync('ss', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!hasSs && process.env.CI === 'true')
  throw new Error('the keepalive test needs `ss` (iproute2) under CI=true');
if (!hasSs) console.warn('[readback] skipping the keepalive test: `ss` (iproute2) is not installed');

describe.skipIf(!available || !hasSs)('TCP keepalive on the connections readback opens', () => {
  it('arms keepalive on every connection of a pool opened from a connection string', async () => {
    const before = new Set(connectionsToServer());
    const store = await postgresStore({ connectionString: PG_URL, schema: tempSchema() });
    try {
      // Several connections at once, so more than the migration's one is open.
      await Promise.all([1, 2, 3].map((n) => store.reserve(newOp(n), ev('reserved'))));
      const opened = connectionsToServer().filter((line) => !before.has(line));
      expect(opened.length).toBeGreaterThan(0);
      for (const line of opened) expect(line).toMatch(/timer:\(keepalive,/);
      expect(KEEPALIVE_DELAY_MS).toBe(10_000);
    } finally {
      await store.close();
    }
  });

  it('leaves a pool the caller passed in as the caller configured it', async () => {
    const pool = tempPool(2);
    const before = new Set(connectionsToServer());
    const store = await postgresStore({ pool, schema: tempSchema() });
    await store.reserve(newOp(1), ev('reserved'));
    const opened = connectionsToServer().filter((line) => !before.has(line));
    expect(opened.length).toBeGreaterThan(0);
    for (const line of opened) expect(line).not.toMatch(/keepalive/);
    await store.close();
  });
});
