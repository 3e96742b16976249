// `ops list --shadow` against a Postgres store: the verdict lives in the jsonb completion column.
import { describe, expect, it } from 'vitest';
import { postgresStore } from '../../src/postgres/index.js';
import { runCli } from '../cli/support.js';
import { PG_URL, pgSuite, storeUrl } from '../postgres/support.js';
import { ctx, setup } from './support.js';

const { available, tempSchema } = await pgSuite();

describe.skipIf(!available)('readback ops list --shadow (Postgres)', () => {
  it('finds the disagreement a shadow run recorded, and only it', async () => {
    const schema = tempSchema();
    const store = await postgresStore({ connectionString: PG_URL, schema });
    const { hd, runner } = setup({ store, shadow: true });
    const good = await runner.shadow(hd.actions.updateTicket, { id: 'T-104', status: 'pending' }, ctx);
    hd.tickets.faults.softFailNextWrite = true;
    const soft = await runner.shadow(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect((await hd.tickets.get('T-104'))?.status).toBe('pending');
    const stored = await store.get(soft.completion.operationId);
    expect(stored?.completion?.shadow).toEqual({ claimed: 'success', status: 'failed', agrees: false });
    await store.close();

    const url = storeUrl(schema);
    const { code, stdout } = await runCli(['ops', 'list', '--store', url, '--shadow', '--json']);
    expect(code).toBe(0);
    const ids = (JSON.parse(stdout) as { id: string }[]).map((r) => r.id);
    expect(ids).toEqual([soft.completion.operationId]);
    expect(ids).not.toContain(good.completion.operationId);
  });
});
