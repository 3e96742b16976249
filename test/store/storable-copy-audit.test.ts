import { describe, expect, it } from 'vitest';
import { renderUnstorable, storableCopy, storableText } from '../../src/store/records.js';

describe('storableCopy', () => {
  it('returns plain data that needs nothing as it is, without copying', () => {
    const value = { a: ['x', 1, null, { b: 'ok' }], c: true };
    const found: string[] = [];
    expect(storableCopy(value, 'v', found)).toBe(value);
    expect(found).toEqual([]);
  });

  it('renders every refused value and key, names their paths, and leaves the input untouched', () => {
    const value = { ok: 'fine', list: ['a\u0000', 'b'], 'k\ud800': { deep: 'x\udc00y' } };
    const before = structuredClone(value);
    const found: string[] = [];
    const copy = storableCopy(value, 'evidence', found) as Record<string, unknown>;
    expect(value).toEqual(before);
    const key = renderUnstorable('k\ud800');
    expect(copy).toEqual({
      ok: 'fine',
      list: [renderUnstorable('a\u0000'), 'b'],
      [key]: { deep: renderUnstorable('x\udc00y') },
    });
    expect(found).toEqual(['evidence.list[0]', `evidence.${key}`, `evidence.${key}.deep`]);
    // What it gives back is text every store keeps, and its JSON still spells out the original characters.
    const json = JSON.stringify(copy);
    expect(storableText(json, true)).toBe(true);
    expect(json).toContain('a\\\\u0000');
  });

  it('never lets a rendered key overwrite a key the object already has, nor set a prototype', () => {
    const taken = renderUnstorable('\u0000');
    // As JSON.parse gives them: "__proto__" an own key, not the prototype.
    const value = JSON.parse('{"__proto__": "p\\u0000"}') as Record<string, unknown>;
    value[taken] = 1;
    value['\u0000'] = 2;
    const found: string[] = [];
    const copy = storableCopy(value, 'v', found) as Record<string, unknown>;
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(copy, '__proto__')?.value).toBe(renderUnstorable('p\u0000'));
    expect(copy[taken]).toBe(1);
    expect(Object.values(copy)).toContain(2);
    expect(Object.keys(copy)).toHaveLength(3);
  });
});
