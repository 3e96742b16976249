// Two runners on one store race an approval: the one whose policy answered late must not send the approved
// operation back to a reviewer (the lifecycle alone, `requested` again after the approval, cannot tell it).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createRunner, defineAction, memoryStore, type OperationStore } from '../../src/index.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { callsTo, ctx } from './support.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const input = { id: 'T-104', status: 'closed' as const };

const backends: Record<
  string,
  () => Promise<{ a: OperationStore; b: OperationStore; close(): Promise<void> }>
> = {
  memory: async () => {
    const s = memoryStore();
    return { a: s, b: s, close: () => s.close() };
  },
  sqlite: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'readback-approval-race-'));
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

for (const [name, make] of Object.entries(backends)) {
  describe(`an approval raced by a second runner (${name})`, () => {
    it('a drive that began before the park cannot send an approved operation back to awaiting_approval', async () => {
      const pair = await make();
      const hd = createHelpdesk();
      hd.tickets.seed([{ id: 'T-104', tenant: 'acme' }]);
      // The policy is slow for the second caller (a remote policy service, say).
      const gates = [deferred(), deferred()];
      let calls = 0;
      const entered = [deferred(), deferred()];
      const closeTicket = defineAction({
        ...hd.actions.updateTicket,
        name: 'close_ticket',
        needsApproval: async () => {
          const n = calls++;
          entered[n]?.resolve();
          await gates[n]?.promise;
          return true;
        },
      });
      const r1 = createRunner({ store: pair.a, clock: hd.clock, random: () => 0.5, actions: [closeTicket] });
      const r2 = createRunner({ store: pair.b, clock: hd.clock, random: () => 0.5, actions: [closeTicket] });

      // Agent process 1 calls the tool; process 2 gets the same call (a retried request, say).
      const first = r1.run(closeTicket, input, ctx);
      await entered[0]!.promise;
      const second = r2.run(closeTicket, input, ctx);
      await entered[1]!.promise;

      // Process 1 parks; the reviewer approves what they were shown.
      gates[0]!.resolve();
      const parked = await first;
      expect(parked.errorCode).toBe('awaiting_approval');
      const fingerprint = String(parked.evidence?.fingerprint);
      const approved = await r1.approve(parked.operationId, { by: 'maria', fingerprint });
      expect(approved.status).toBe('pending');
      expect((await pair.a.get(parked.operationId))?.lifecycle).toBe('requested');

      // Process 2's policy answers now: its stale drive parks the already approved operation again.
      gates[1]!.resolve();
      const late = await second;

      const record = await pair.a.get(parked.operationId);
      expect(record).toMatchObject({ lifecycle: 'requested', status: 'pending' });
      // The late caller hears that someone else has it, not that a reviewer must still approve.
      expect(late).toMatchObject({ status: 'pending', errorCode: 'in_progress' });
      // A second, contradicting decision is refused: the operation was decided.
      await expect(r2.reject(parked.operationId, { by: 'lee', fingerprint })).rejects.toMatchObject({
        code: 'not_awaiting_approval',
      });
      // The next run executes it, once.
      const next = await r1.run(closeTicket, input, ctx);
      expect(next.status).toBe('verified');
      const trail = (await pair.a.events(parked.operationId)).map((e) => `${e.type}:${e.from}->${e.to}`);
      expect(trail).toEqual([
        'reserved:null->requested',
        'status:requested->awaiting_approval',
        'approved:awaiting_approval->requested',
        'executing:requested->executing',
        'settled:executing->settled',
      ]);
      expect(callsTo(hd.tickets, 'update')).toHaveLength(1);
      await pair.close();
    });
  });
}
