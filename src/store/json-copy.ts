// What a JSON column keeps of a value, built in one pass: the reference store copies with it, and the durable
// stores encode from its copy, so the record a write returns holds exactly what its text holds without
// parsing that text back.

/**
 * What a JSON column keeps of `value`, as `JSON.parse(JSON.stringify(value))` gives it but in one pass: a
 * Date becomes its ISO text, NaN and the infinities null, -0 is 0, undefined fields are dropped (undefined
 * items become null). The durable stores can keep nothing else, and an action's execute and observe are
 * handed what the store kept, so the reference store keeps the same: tests on it then see what production
 * on SQLite or Postgres sees. Undefined when JSON would write nothing (undefined, a function, a symbol).
 */
export function jsonCopy(value: unknown, key: string | number = ''): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      // `value === 0` holds for -0 too, which JSON writes as 0.
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : null;
    case 'bigint':
      // What JSON.stringify does, and so what SQLite and Postgres do with it.
      throw new TypeError('Do not know how to serialize a BigInt');
    case 'object': {
      if (value === null) return null;
      const toJson = (value as { toJSON?: unknown }).toJSON;
      if (typeof toJson === 'function') return jsonCopy(toJson.call(value, String(key)), key);
      if (value instanceof Number || value instanceof String || value instanceof Boolean) {
        return jsonCopy(value.valueOf(), key);
      }
      if (Array.isArray(value)) {
        const out: unknown[] = new Array(value.length);
        for (let i = 0; i < value.length; i++) out[i] = jsonCopy(value[i], i) ?? null;
        return out;
      }
      const out: Record<string, unknown> = {};
      for (const field of Object.keys(value)) {
        const item = jsonCopy((value as Record<string, unknown>)[field], field);
        if (item !== undefined) setOwnField(out, field, item);
      }
      return out;
    }
    default:
      return undefined;
  }
}

/**
 * The JSON text a column stores for `value` (null for SQL NULL: null, undefined, or nothing JSON can write)
 * and the value that text holds, as parsing it would give: encoded from one copy, so the two agree even for a
 * getter or `toJSON` that answers differently each time, and the text is never parsed back.
 */
export function jsonColumn(value: unknown): { text: string | null; value: unknown } {
  if (value === null || value === undefined) return NULL_COLUMN;
  let copy: unknown;
  try {
    copy = jsonCopy(value);
  } catch (error) {
    // A cycle (or a value nested past the stack) overflows the copy: JSON.stringify reports it as it always
    // did (a TypeError naming the circular structure); a value it can write after all is parsed back.
    if (!(error instanceof RangeError)) throw error;
    const text = JSON.stringify(value) ?? null;
    return { text, value: text === null ? null : JSON.parse(text) };
  }
  return copy === undefined ? NULL_COLUMN : { text: JSON.stringify(copy), value: copy };
}

const NULL_COLUMN: { text: null; value: null } = Object.freeze({ text: null, value: null }) as {
  text: null;
  value: null;
};

/** Sets a field, keeping a key named "__proto__" an own field (plain assignment would set the prototype instead). */
export function setOwnField(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}
