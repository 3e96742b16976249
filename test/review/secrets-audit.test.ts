import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAction } from '../../src/contract/define.js';
import { createRunner } from '../../src/runner/runner.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { schema } from '../../src/testing/schema.js';
import { runCli } from '../cli/support.js';

// The store keeps an operation's raw input and raw result (the runner needs them to recover it); a
// review of it writes a fixture meant to be committed, and reports meant to be pasted into an incident.
const PASSWORD = 'hunter2-Correct-Horse';
const TOKEN = 'sk_live_51HqLyjWDarjtT1zdp7dcXYZabc';
const dir = mkdtempSync(join(tmpdir(), 'readback-review-secrets-'));
const db = join(dir, 'runs.db');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeAll(async () => {
  const store = await sqliteStore({ path: db });
  const accounts = new Map<string, { user: string; reset: boolean }>();
  const resetPassword = defineAction({
    name: 'reset_password',
    description: 'Set a new password for a user.',
    system: 'identity provider',
    input: schema({ user: 'string', newPassword: 'string' }),
    target: ({ user }) => `user:${user}`,
    postcondition: 'The user has the new password.',
    // The provider echoes a session token; the write itself silently fails.
    execute: ({ user }) => ({ ok: true, user, token: `Bearer ${TOKEN}` }),
    observe: ({ user }) => accounts.get(user) ?? null,
    expect: () => ({ reset: true }),
    safeToRepeat: true,
  });
  let seq = 0;
  const runner = createRunner({ store, newId: () => `op-s${++seq}` });
  const c = await runner.run(
    resetPassword,
    { user: 'u-7', newPassword: PASSWORD },
    { runId: 'r-secret', scope: {} },
  );
  expect(c.status).not.toBe('verified');
  await store.close();
});

describe('readback review --store keeps secrets out of what it prints and writes', () => {
  it('redacts the stored input and raw result in the report, the JSON and the fixture', async () => {
    const fixture = join(dir, 'fixture.json');
    const args = [
      'review',
      '--store',
      db,
      '--run',
      'r-secret',
      '--request',
      'Reset the password of user u-7.',
    ];
    const withAnswer = [...args, '--answer', 'The password of u-7 was reset.'];
    const text = await runCli([...withAnswer, '--fixture-out', fixture]);
    const json = await runCli([...withAnswer, '--json']);
    expect(text.code).toBe(3);
    expect(json.code).toBe(3);
    const written = readFileSync(fixture, 'utf8');
    for (const out of [text.stdout, json.stdout, written]) {
      expect(out).not.toContain(PASSWORD);
      expect(out).not.toContain(TOKEN);
    }
    // What is not secret stays, so the fixture still reproduces the incident.
    const parsed = JSON.parse(written);
    expect(parsed.call).toMatchObject({ name: 'reset_password', args: { user: 'u-7' } });
    const again = await runCli(['review', fixture, '--json']);
    expect(JSON.parse(again.stdout).first).toMatchObject({
      class: parsed.expected.class,
      where: parsed.expected.where,
    });
  });
});
