import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRunner } from '../../src/runner/runner.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { runCli } from '../cli/support.js';
import { ctx, setup } from './support.js';

let dir: string;
let db: string;
let expected: { softFail: string; landedAfterThrow: string };
let agreeing: string[];
let normalFailure: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'readback-shadow-ops-'));
  db = join(dir, 'ops.db');
  const store = await sqliteStore({ path: db });
  const { hd, runner } = setup({ store, shadow: true });
  const live = createRunner({ store, clock: hd.clock, random: () => 0.5 });

  const good = await runner.shadow(hd.actions.updateTicket, { id: 'T-104', status: 'pending' }, ctx);
  hd.tickets.faults.softFailNextWrite = true;
  const soft = await runner.shadow(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
  hd.tickets.faults.landNextWriteAfterMs = 0;
  const threw = await runner.shadow(hd.actions.updateTicket, { id: 'T-105', status: 'closed' }, ctx).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(threw).toMatchObject({ code: 'ETIMEDOUT' });
  const queued = await runner.shadow(
    hd.actions.sendEmail,
    { to: 'ana@example.com', subject: 'a', body: 'b' },
    ctx,
  );
  // A normal (non-shadow) run that failed is not a shadow disagreement.
  hd.tickets.faults.softFailNextWrite = true;
  const failed = await live.run(
    hd.actions.updateTicket,
    { id: 'T-104', status: 'closed' },
    { ...ctx, runId: 'live' },
  );
  expect(failed.status).toBe('failed');

  const landed = (await store.list({ action: 'update_ticket' })).find((r) => r.target === 'ticket:T-105');
  expect(soft.completion.shadow?.agrees).toBe(false);
  expect(landed?.completion?.shadow?.agrees).toBe(false);
  expect(good.completion.shadow?.agrees).toBe(true);
  expect(queued.completion.shadow?.agrees).toBeNull();
  expected = { softFail: soft.completion.operationId, landedAfterThrow: landed!.id };
  agreeing = [good.completion.operationId, queued.completion.operationId];
  normalFailure = failed.operationId;
  await store.close();
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('readback ops list --shadow (SQLite)', () => {
  it('lists exactly the disagreements, with claim, verified status and reason', async () => {
    const { code, stdout, stderr } = await runCli(['ops', 'list', '--store', db, '--shadow']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const lines = stdout.split('\n');
    const header = lines.find((line) => line.startsWith('│ id '));
    expect(header?.split('│').map((c) => c.trim())).toEqual([
      '',
      'id',
      'action',
      'claimed',
      'verified status',
      'reason',
      '',
    ]);
    const row = (id: string) =>
      lines
        .find((line) => line.includes(id))
        ?.split('│')
        .map((c) => c.trim());
    expect(row(expected.softFail)?.slice(2, 5)).toEqual(['update_ticket', 'success', 'failed']);
    expect(row(expected.landedAfterThrow)?.slice(2, 5)).toEqual(['update_ticket', 'error', 'verified']);
    for (const id of [...agreeing, normalFailure]) expect(stdout).not.toContain(id);
    expect(stdout).toContain('2 shadow disagreements (operator signals, not proof)');
  });

  it('plain ops list marks every shadow record as shadow, and no normal one', async () => {
    const { code, stdout } = await runCli(['ops', 'list', '--store', db]);
    expect(code).toBe(0);
    const statusOf = (id: string) =>
      stdout
        .split('\n')
        .find((line) => line.includes(id))
        ?.split('│')
        .map((cell) => cell.trim())[5];
    expect(statusOf(expected.softFail)).toBe('failed (shadow)');
    expect(statusOf(expected.landedAfterThrow)).toBe('verified (shadow)');
    for (const id of agreeing) expect(statusOf(id)).toMatch(/ \(shadow\)$/);
    expect(statusOf(normalFailure)).toBe('failed');
  });

  it('--json prints the disagreeing records with their verdicts', async () => {
    const { code, stdout } = await runCli(['ops', 'list', '--store', db, '--shadow', '--json']);
    expect(code).toBe(0);
    const records = JSON.parse(stdout) as { id: string; completion: { shadow: unknown } }[];
    expect(records.map((r) => r.id).sort()).toEqual([expected.softFail, expected.landedAfterThrow].sort());
    const soft = records.find((r) => r.id === expected.softFail);
    expect(soft?.completion.shadow).toEqual({ claimed: 'success', status: 'failed', agrees: false });
  });

  it('ops show names the verdict as an operator signal', async () => {
    const { code, stdout } = await runCli(['ops', 'show', expected.softFail, '--store', db]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/ shadow +tool claimed success; disagrees \(an operator signal, never proof\)/);
    expect(stdout).toMatch(/ message +Shadow observation for operators, not proof for users/);
  });

  it('combines with --action, and says when there is nothing to show', async () => {
    const { code, stdout } = await runCli([
      'ops',
      'list',
      '--store',
      db,
      '--shadow',
      '--action',
      'send_email',
    ]);
    expect(code).toBe(0);
    expect(stdout).toBe('no shadow disagreements\n');
  });
});

describe('readback ops resolve on a shadow operation', () => {
  it('keeps the shadow verdict, judged against the decision, so the disagreement still shows', async () => {
    const pendingId = agreeing[1]!;
    const resolved = await runCli([
      'ops',
      'resolve',
      pendingId,
      '--store',
      db,
      '--status',
      'failed',
      '--note',
      'provider says the queue dropped it',
      '--by',
      'oncall',
    ]);
    expect(resolved.stderr).toBe('');
    expect(resolved.code).toBe(0);

    const store = await sqliteStore({ path: db });
    const record = await store.get(pendingId);
    await store.close();
    expect(record?.status).toBe('failed');
    expect(record?.completion?.errorCode).toBe('operator_resolved');
    // The live tool said "accepted"; the operator found it failed: a disagreement for operators.
    expect(record?.completion?.shadow).toEqual({ claimed: 'accepted', status: 'failed', agrees: false });
    expect(record?.completion?.message).toMatch(/^Shadow observation for operators, not proof for users/);

    const { stdout } = await runCli(['ops', 'list', '--store', db, '--shadow', '--json']);
    const ids = (JSON.parse(stdout) as { id: string }[]).map((r) => r.id);
    expect(ids).toContain(pendingId);
  });
});
