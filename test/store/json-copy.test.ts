// What a JSON column keeps: `jsonColumn` gives the text a store binds and the value that text holds, from one
// read of the caller's value, so a returned record equals a read of the row without parsing the text back.
import { describe, expect, it } from 'vitest';
import { jsonColumn } from '../../src/store/json-copy.js';

/** What the column would hold by the old route: the text, then the text parsed back. */
const roundTrip = (value: unknown) => {
  const text = JSON.stringify(value) ?? null;
  return { text, value: text === null ? null : JSON.parse(text) };
};

describe('jsonColumn', () => {
  it('gives the text JSON.stringify writes and the value JSON.parse reads back, for every kind JSON keeps or changes', () => {
    const when = new Date(Date.UTC(2026, 10, 30));
    const cases: unknown[] = [
      'text with “quotes”, \\ and \n',
      0,
      -0,
      1e21,
      5e-324,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      true,
      [1, undefined, () => 1, Symbol('s'), null],
      { a: undefined, b: () => 1, c: null, d: [{ e: -0 }], 10: 'ten', 2: 'two' },
      { when, boxed: [new Number(3), new String('s'), new Boolean(false)] },
      { map: new Map([[1, 2]]), set: new Set([1]) },
      { toJSON: (key: string) => ({ key, n: 1 }) },
      JSON.parse('{"__proto__":{"polluted":true},"ok":1}'),
    ];
    for (const value of cases) {
      const column = jsonColumn(value);
      expect(column, JSON.stringify(value)).toEqual(roundTrip(value));
      // The value is a copy: changing it does not reach the text or the caller's value.
      if (column.value !== null && typeof column.value === 'object') expect(column.value).not.toBe(value);
    }
    const proto = jsonColumn(JSON.parse('{"__proto__":{"polluted":true}}')).value as object;
    expect(Object.keys(proto)).toEqual(['__proto__']);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('is SQL NULL for null, undefined and what JSON cannot write', () => {
    for (const value of [null, undefined, () => 1, Symbol('s')]) {
      expect(jsonColumn(value)).toEqual({ text: null, value: null });
    }
  });

  it('reads the value once, so text and value agree even when a getter or toJSON answers differently each time', () => {
    let reads = 0;
    const changing = {
      get n() {
        reads++;
        return reads;
      },
    };
    const column = jsonColumn({ changing, later: { toJSON: () => reads * 10 } });
    expect(reads).toBe(1);
    expect(JSON.parse(column.text!)).toEqual(column.value);
    expect(column.value).toEqual({ changing: { n: 1 }, later: 10 });
  });

  it('fails as JSON.stringify does for a cycle and a BigInt', () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    expect(() => jsonColumn(cycle)).toThrow(TypeError);
    expect(() => jsonColumn(cycle)).toThrow(/circular/i);
    expect(() => jsonColumn({ n: 1n })).toThrow(new TypeError('Do not know how to serialize a BigInt'));
  });
});
