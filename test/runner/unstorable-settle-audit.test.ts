// Caller data a store cannot keep as given (NUL, a broken UTF-16 half) in what a write carries AFTER the
// effect happened: evidence at settle time, a provider's reference, an execute result, a baseline. Postgres
// refused the settle, the operation stayed open, and every reconcile read it again and was refused again.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  accepted,
  type Completion,
  createRunner,
  defineAction,
  memoryStore,
  type OperationStore,
} from '../../src/index.js';
import { postgresStore } from '../../src/postgres/index.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { renderUnstorable } from '../../src/store/records.js';
import { FakeClock } from '../../src/testing/index.js';
import { schema } from '../../src/testing/schema.js';
import { PG_URL, pgSuite } from '../postgres/support.js';

const { available, tempSchema } = await pgSuite();
const dir = mkdtempSync(join(tmpdir(), 'readback-unstorable-settle-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NUL = 'name\u0000tail';
const HALF = 'lone \ud800 half';

type Kind = 'memory' | 'sqlite' | 'postgres';
const stores: [Kind, () => Promise<OperationStore>][] = [
  ['memory', async () => memoryStore()],
  ['sqlite', async () => sqliteStore({ path: join(dir, `${Math.random().toString(36).slice(2)}.db`) })],
];
if (available) {
  stores.push([
    'postgres',
    () => postgresStore({ connectionString: PG_URL, schema: tempSchema(), leaseClock: 'caller' }),
  ]);
}

/** What `text` reads back as from a store of `kind`: itself, or its marked rendering where jsonb refuses it. */
const kept = (kind: Kind, text: string) => (kind === 'postgres' ? renderUnstorable(text) : text);

/** A row store whose reads return the name with `odd` appended, and a check that passes on any name. */
function rows(odd: string) {
  const names = new Map<string, string>();
  let readable = true;
  const action = defineAction({
    name: 'rename',
    description: 'Rename a row.',
    input: schema({ id: 'string', name: 'string' }),
    target: (i: { id: string }) => `row:${i.id}`,
    postcondition: 'The row has a name.',
    async execute(i: { id: string; name: string }) {
      names.set(i.id, i.name);
      return { echoed: `${i.name}${odd}` };
    },
    async observe(i: { id: string }) {
      if (!readable) throw new Error('verifier down');
      const name = names.get(i.id);
      return name === undefined ? null : { id: i.id, name: `${name}${odd}`, tags: { [odd]: 1 } };
    },
    expect: (_i: unknown, o: { name: string; tags: Record<string, number> }) => [
      { name: 'named', pass: o.name.length > 0, expected: 'a name', observed: o.name },
      { name: 'tags', pass: true, expected: 'any', observed: o.tags },
    ],
    safeToRepeat: false,
  });
  return {
    action,
    names,
    setReadable(on: boolean) {
      readable = on;
    },
  };
}

async function settledEvent(store: OperationStore, id: string) {
  return (await store.events(id)).find((e) => e.type === 'settled');
}

describe.each(stores)('unstorable text after the effect, %s store', (kind, open) => {
  for (const odd of [NUL, HALF]) {
    const label = odd === NUL ? 'NUL' : 'unpaired surrogate';

    it(`settles verified with ${label} in the evidence, keeps it (escaped where refused), and never loops`, async () => {
      const store = await open();
      const clock = new FakeClock();
      const r = rows(odd);
      const runner = createRunner({ store, clock, actions: [r.action] });
      const c = await runner.run(r.action, { id: 'a', name: 'n' }, { runId: 'run-1' });
      expect(c.status).toBe('verified');
      const record = await store.get(c.operationId);
      expect(record?.lifecycle).toBe('settled');
      expect(record?.status).toBe('verified');
      const stored = record?.completion as Completion;
      expect(stored.evidence?.named).toBe(kept(kind, `n${odd}`));
      expect(stored.evidence?.tags).toEqual({ [kept(kind, odd)]: 1 });
      // The caller is told what every later read of the record says.
      expect(c.evidence).toEqual(stored.evidence);
      const settled = await settledEvent(store, c.operationId);
      expect(settled?.detail?.raw).toEqual({ echoed: kept(kind, `n${odd}`) });
      if (kind === 'postgres') {
        expect((settled?.detail?.unstorable as { fields: string[] }).fields).toEqual(
          expect.arrayContaining([
            'completion.evidence.named',
            `completion.evidence.tags.${renderUnstorable(odd)}`,
            'event.detail.raw.echoed',
          ]),
        );
      } else {
        expect(settled?.detail?.unstorable).toBeUndefined();
      }
      clock.advance(3_600_000);
      const again = await runner.reconcile({ once: true });
      expect(again.claimed).toBe(0);
      expect(again.errors).toBe(0);
      await store.close();
    });

    it(`a reconciler settles an open operation whose read holds ${label}`, async () => {
      const store = await open();
      const clock = new FakeClock();
      const r = rows(odd);
      const runner = createRunner({ store, clock, actions: [r.action] });
      r.setReadable(false);
      const first = await runner.run(r.action, { id: 'b', name: 'n' }, { runId: 'run-2' });
      expect(first.status).toBe('unknown');
      expect(first.errorCode).toBe('verifier_unavailable');
      r.setReadable(true);
      clock.advance(3_600_000);
      const report = await runner.reconcile({ once: true });
      expect(report).toMatchObject({ claimed: 1, errors: 0 });
      expect(report.byStatus.verified).toBe(1);
      const record = await store.get(first.operationId);
      expect(record).toMatchObject({ lifecycle: 'settled', status: 'verified', leaseToken: null });
      expect((record?.completion as Completion).evidence?.named).toBe(kept(kind, `n${odd}`));
      await store.close();
    });

    it(`a verifier error quoting ${label} still parks the operation for a later read`, async () => {
      const store = await open();
      const clock = new FakeClock();
      const r = rows('');
      const broken = defineAction({
        ...r.action,
        async observe() {
          throw new Error(`upstream said ${odd}`);
        },
      });
      const runner = createRunner({ store, clock, actions: [broken] });
      const c = await runner.run(broken, { id: 'd', name: 'n' }, { runId: 'run-5' });
      expect(c).toMatchObject({ status: 'unknown', errorCode: 'verifier_unavailable' });
      const record = await store.get(c.operationId);
      expect(record?.lifecycle).toBe('executing');
      expect(record?.nextPollAt).toBeGreaterThan(clock.now());
      expect(record?.completion).toEqual(c);
      const reason =
        kind === 'postgres' ? renderUnstorable(`verifier unavailable: upstream said ${odd}`) : undefined;
      if (reason) expect(c.reason).toBe(reason);
      else expect(c.reason).toContain(odd);
      await store.close();
    });

    it(`accepted work whose provider reference holds ${label} is followed and settled`, async () => {
      const store = await open();
      const clock = new FakeClock();
      const jobs = new Map<string, string>();
      const job = defineAction({
        name: 'run_job',
        description: 'Run a job.',
        input: schema({ id: 'string' }),
        target: (i: { id: string }) => `job:${i.id}`,
        mode: 'accepted',
        postcondition: 'The job is done.',
        async before() {
          return { id: 'none', state: 'done', note: `baseline ${odd}` };
        },
        async execute(i: { id: string }) {
          jobs.set(i.id, 'done');
          return accepted(`ref-${odd}`);
        },
        async observe(i: { id: string }) {
          const state = jobs.get(i.id);
          return state === undefined ? null : { id: i.id, state, note: '' };
        },
        terminal: (o: { state: string; note: string }) => (o.state === 'done' ? 'succeeded' : 'running'),
        expect: (i: { id: string }) => ({ id: i.id, state: 'done' }),
        safeToRepeat: false,
      });
      const runner = createRunner({ store, clock, actions: [job] });
      const c = await runner.run(job, { id: 'j' }, { runId: 'run-3' });
      expect(c.status).toBe('verified');
      const record = await store.get(c.operationId);
      expect(record).toMatchObject({ lifecycle: 'settled', status: 'verified' });
      expect(record?.providerRef).toBe(kept(kind, `ref-${odd}`));
      expect(record?.baseline).toEqual({ id: 'none', state: 'done', note: kept(kind, `baseline ${odd}`) });
      const types = (await store.events(c.operationId)).map((e) => e.type);
      expect(types).toContain('accepted');
      await store.close();
    });
  }
});

describe.each(stores)('a reconciler owner no store can record, %s store', (_kind, open) => {
  // Postgres refused every claim (its text cannot hold NUL): the loop counted an error a round, for ever.
  it('is refused before anything is claimed', async () => {
    const store = await open();
    const clock = new FakeClock();
    const r = rows('');
    const runner = createRunner({ store, clock, actions: [r.action] });
    r.setReadable(false);
    const open1 = await runner.run(r.action, { id: 'c', name: 'n' }, { runId: 'run-4' });
    clock.advance(3_600_000);
    for (const owner of ['ops\u0000', 'ops \udc00']) {
      await expect(runner.reconcile({ once: true, owner })).rejects.toMatchObject({
        code: 'invalid_options',
        field: 'owner',
      });
    }
    const record = await store.get(open1.operationId);
    expect(record?.leaseOwner).toBeNull();
    expect((await store.events(open1.operationId)).map((e) => e.type)).not.toContain('claimed');
    await store.close();
  });
});
