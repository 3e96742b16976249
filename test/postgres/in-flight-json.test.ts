import { afterEach, describe, expect, it, vi } from 'vitest';
import { InFlightJson } from '../../src/postgres/in-flight-json.js';
import { postgresStore } from '../../src/postgres/index.js';
import { ev, newOp } from '../../src/testing/conformance/support.js';
import { pgSuite } from './support.js';

const nextMacrotask = () => new Promise<void>((resolve) => setImmediate(resolve));
const TEXTS: ['completion' | 'providerRef' | 'baseline', string | null][] = [
  ['completion', '{"status":"verified","message":"“done”","checks":[{"pass":true}]}'],
  ['providerRef', '{"jobId":"j-1"}'],
  ['baseline', null],
];

afterEach(() => vi.restoreAllMocks());

describe('InFlightJson', () => {
  it('decodes on the next macrotask after soon(), once, into fresh values', async () => {
    const parse = vi.spyOn(JSON, 'parse');
    const json = new InFlightJson(TEXTS);
    json.soon();
    expect(parse).not.toHaveBeenCalled();
    await nextMacrotask();
    expect(parse).toHaveBeenCalledTimes(2); // the null text needs no parse
    const bound = json.get();
    expect(parse).toHaveBeenCalledTimes(2);
    expect(bound).toEqual({
      completion: { status: 'verified', message: '“done”', checks: [{ pass: true }] },
      providerRef: { jobId: 'j-1' },
      baseline: null,
    });
    const other = new InFlightJson(TEXTS).get();
    expect(other.completion).toEqual(bound.completion);
    expect(other.completion).not.toBe(bound.completion);
  });

  it('decodes at once when asked before the macrotask, and not again after it', async () => {
    const parse = vi.spyOn(JSON, 'parse');
    const json = new InFlightJson(TEXTS);
    json.soon();
    const bound = json.get();
    expect(parse).toHaveBeenCalledTimes(2);
    await nextMacrotask();
    expect(parse).toHaveBeenCalledTimes(2);
    expect(json.get()).toBe(bound);
  });

  it('serves every write of one turn with a single setImmediate', async () => {
    const immediate = vi.spyOn(globalThis, 'setImmediate');
    const writes = Array.from({ length: 20 }, () => new InFlightJson(TEXTS));
    for (const json of writes) json.soon();
    expect(immediate).toHaveBeenCalledTimes(1);
    const parse = vi.spyOn(JSON, 'parse');
    await nextMacrotask();
    expect(parse).toHaveBeenCalledTimes(40);
    // The next turn schedules afresh.
    new InFlightJson(TEXTS).soon();
    expect(immediate).toHaveBeenCalledTimes(3); // the one above, nextMacrotask's own, this one
  });
});

const { available, tempSchema, tempPool } = await pgSuite();

describe.skipIf(!available)(
  'the Postgres store decodes what a write binds while the statement is out',
  () => {
    it('parses no bound JSON after the answer arrives, and returns what a read returns', async () => {
      const pool = tempPool(2);
      const answered: string[] = [];
      // The server's answer is held back a few milliseconds, as a slower network would, and noted on arrival.
      const slow = {
        totalCount: 0,
        query: (config: unknown, values?: unknown[]) =>
          (pool.query as (c: unknown, v?: unknown[]) => Promise<unknown>)(config, values).then(
            (result) =>
              new Promise((resolve) =>
                setTimeout(() => {
                  answered.push('answer');
                  resolve(result);
                }, 5),
              ),
          ),
      };
      const store = await postgresStore({ pool: slow as never, schema: tempSchema() });
      const completion = { status: 'verified', message: 'Verified: “The row is done.” holds.', checks: [] };
      const parse = vi.spyOn(JSON, 'parse');
      const seen = () => parse.mock.calls.map(([text]) => String(text));
      await store.reserve(newOp(1), ev('reserved'));
      const input = JSON.stringify(newOp(1).input);
      // The reserve's input was decoded before its answer came back: nothing parsed it after.
      expect(seen().filter((text) => text === input)).toHaveLength(1);
      parse.mockClear();
      answered.length = 0;
      const pending = store.transition(
        'op-1',
        ['requested'],
        { lifecycle: 'settled', status: 'verified', completion: completion as never },
        ev('settled'),
      );
      await nextMacrotask();
      await nextMacrotask();
      expect(answered).toEqual([]);
      expect(seen()).toContain(JSON.stringify(completion));
      const settled = await pending;
      expect(answered).toEqual(['answer']);
      // No completion text parsed after the answer: the row's own copy was never decoded.
      expect(seen().filter((text) => text.includes('The row is done.'))).toHaveLength(1);
      expect(settled?.completion).toEqual(completion);
      expect(await store.get('op-1')).toEqual(settled);
      await store.close();
    });
  },
);
