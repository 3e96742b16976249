import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createRunner,
  defineAction,
  memoryStore,
  type OperationStore,
  ReadbackError,
  resolveByOperator,
} from '../../src/index.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { callsTo, ctx } from './support.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

type Pair = { a: OperationStore; b: OperationStore; close(): Promise<void> };
const backends: Record<string, () => Promise<Pair>> = {
  memory: async () => {
    const s = memoryStore();
    return { a: s, b: s, close: () => s.close() };
  },
  sqlite: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rb-approval-audit-'));
    dirs.push(dir);
    const path = join(dir, 'ops.db');
    const a = await sqliteStore({ path });
    const b = await sqliteStore({ path });
    return {
      a,
      b,
      close: async () => {
        await a.close();
        await b.close();
      },
    };
  },
};

function gated(pair: Pair) {
  const hd = createHelpdesk();
  hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
  const closeTicket = defineAction({
    ...hd.actions.updateTicket,
    name: 'close_ticket',
    needsApproval: () => true,
  });
  const r1 = createRunner({ store: pair.a, clock: hd.clock, random: () => 0.5, actions: [closeTicket] });
  const r2 = createRunner({ store: pair.b, clock: hd.clock, random: () => 0.5, actions: [closeTicket] });
  return { hd, closeTicket, r1, r2 };
}
const input = { id: 'T-104', status: 'closed' as const };

for (const [name, make] of Object.entries(backends)) {
  describe(`approval races (${name})`, () => {
    it('approve vs approve: one wins, the other is refused', async () => {
      const pair = await make();
      const { r1, r2, closeTicket } = gated(pair);
      const parked = await r1.run(closeTicket, input, ctx);
      const fingerprint = String(parked.evidence?.fingerprint);
      const results = await Promise.allSettled([
        r1.approve(parked.operationId, { by: 'a', fingerprint }),
        r2.approve(parked.operationId, { by: 'b', fingerprint }),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const events = await pair.a.events(parked.operationId);
      expect(events.filter((e) => e.type === 'approved')).toHaveLength(1);
      await pair.close();
    });
    it('approve vs reject', async () => {
      const pair = await make();
      const { hd, r1, r2, closeTicket } = gated(pair);
      const parked = await r1.run(closeTicket, input, ctx);
      const fingerprint = String(parked.evidence?.fingerprint);
      const results = await Promise.allSettled([
        r1.approve(parked.operationId, { by: 'a', fingerprint }),
        r2.reject(parked.operationId, { by: 'b', fingerprint }),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(rejected.reason.code).toBe('not_awaiting_approval');
      await Promise.all([r1.run(closeTicket, input, ctx), r2.poll(parked.operationId)]);
      const events = await pair.a.events(parked.operationId);
      expect(events.filter((e) => e.type === 'approved' || e.type === 'rejected')).toHaveLength(1);
      expect(callsTo(hd.tickets, 'update').length).toBeLessThanOrEqual(1);
      await pair.close();
    });
    it('approve then run on two runners at once executes once', async () => {
      const pair = await make();
      const { hd, r1, r2, closeTicket } = gated(pair);
      const parked = await r1.run(closeTicket, input, ctx);
      const fingerprint = String(parked.evidence?.fingerprint);
      await r1.approve(parked.operationId, { by: 'a', fingerprint });
      const out = await Promise.all([
        r1.run(closeTicket, input, ctx),
        r2.run(closeTicket, input, ctx),
        r2.poll(parked.operationId),
        r1.poll(parked.operationId),
      ]);
      // A loser of the race reports the winner's work as in progress, never as its own second execution.
      for (const c of out)
        expect(`${c.status}/${c.errorCode}`).toMatch(/^(verified\/undefined|pending\/in_progress)$/);
      expect(callsTo(hd.tickets, 'update')).toHaveLength(1);
      const final = await pair.a.get(parked.operationId);
      expect(final?.status).toBe('verified');
      await pair.close();
    });
    it('approve an op that is not awaiting approval / reject then run again', async () => {
      const pair = await make();
      const { hd, r1, r2, closeTicket } = gated(pair);
      const parked = await r1.run(closeTicket, input, ctx);
      const fingerprint = String(parked.evidence?.fingerprint);
      const rej = await r1.reject(parked.operationId, { by: 'a', note: 'no\nway ünïcode 🚫', fingerprint });
      await expect(r2.approve(parked.operationId, { by: 'b', fingerprint })).rejects.toMatchObject({
        code: 'not_awaiting_approval',
      });
      const again = await r2.run(closeTicket, input, ctx);
      expect(again).toEqual(rej);
      expect(callsTo(hd.tickets, 'update')).toHaveLength(0);
      await pair.close();
    });
  });
}

describe('decision text no store can keep exactly', () => {
  it('refuses NUL, lone surrogates and a multi-line reviewer name, recording nothing', async () => {
    const pair = await backends.memory!();
    const { hd, r1, closeTicket } = gated(pair);
    const parked = await r1.run(closeTicket, input, ctx);
    const fingerprint = String(parked.evidence?.fingerprint);
    const before = await pair.a.events(parked.operationId);
    const bad: [string, { by: string; note?: string }][] = [
      ['decision.note', { by: 'maria', note: 'ok\u0000' }],
      ['decision.note', { by: 'maria', note: 'half \ud800 pair' }],
      ['decision.by', { by: 'maria\nroot' }],
      ['decision.by', { by: 'maria\u001b[2J' }],
      ['decision.by', { by: 'ma\u0000ria' }],
    ];
    for (const [field, decision] of bad) {
      for (const decide of [r1.approve, r1.reject]) {
        const error = await decide(parked.operationId, { ...decision, fingerprint }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(ReadbackError);
        expect(error).toMatchObject({ code: 'invalid_options', field });
      }
    }
    for (const [field, resolution] of [
      ['note', { by: 'maria', note: 'gone\u0000' }],
      ['note', { by: 'maria', note: '\udc00' }],
      ['by', { by: 'maria\r\nstatus verified', note: 'n' }],
    ] as const) {
      await expect(
        resolveByOperator(pair.a, parked.operationId, { status: 'failed', ...resolution }, hd.clock.now()),
      ).rejects.toMatchObject({ code: 'invalid_options', field });
    }
    expect(await pair.a.events(parked.operationId)).toEqual(before);
    expect((await pair.a.get(parked.operationId))?.lifecycle).toBe('awaiting_approval');

    // Multi-line notes, emoji and long notes are fine and kept exactly.
    const note = `first line\nsecond 🚫 ünï ${'x'.repeat(100_000)}`;
    await r1.reject(parked.operationId, { by: 'Łukasz 李', note, fingerprint });
    const events = await pair.a.events(parked.operationId);
    expect(events.at(-1)).toMatchObject({ type: 'rejected', actor: 'Łukasz 李', detail: { note } });
    expect(callsTo(hd.tickets, 'update')).toEqual([]);
  });
});
