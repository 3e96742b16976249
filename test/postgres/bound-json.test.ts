import { afterEach, describe, expect, it, vi } from 'vitest';
import { postgresStore } from '../../src/postgres/index.js';
import { ev, newOp } from '../../src/testing/conformance/support.js';
import { pgSuite } from './support.js';

afterEach(() => vi.restoreAllMocks());

const { available, tempSchema, tempPool } = await pgSuite();

describe.skipIf(!available)('the Postgres store returns what a write bound without decoding its JSON', () => {
  it('parses no JSON text a write bound, and returns what a read returns', async () => {
    const pool = tempPool(2);
    const store = await postgresStore({ pool, schema: tempSchema() });
    const completion = { status: 'verified', message: 'Verified: “The row is done.” holds.', checks: [] };
    const parse = vi.spyOn(JSON, 'parse');
    const seen = () => parse.mock.calls.map(([text]) => String(text));
    const op = newOp(1);
    const { record } = await store.reserve(op, ev('reserved'));
    // The input went out as text and came back as the value it was encoded from: nothing parsed it.
    expect(seen().filter((text) => text === JSON.stringify(op.input))).toEqual([]);
    expect(record.input).toEqual(op.input);
    expect(record.input).not.toBe(op.input);
    parse.mockClear();
    const settled = await store.transition(
      'op-1',
      ['requested'],
      { lifecycle: 'settled', status: 'verified', completion: completion as never },
      ev('settled'),
    );
    expect(seen().filter((text) => text.includes('The row is done.'))).toEqual([]);
    expect(settled?.completion).toEqual(completion);
    expect(settled?.completion).not.toBe(completion);
    parse.mockRestore();
    expect(await store.get('op-1')).toEqual(settled);
    await store.close();
  });
});
