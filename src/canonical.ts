import * as crypto from 'node:crypto';

/** Why a value could not be turned into plain, recordable data. */
export type UnusableReason = 'cycle' | 'bigint' | 'getter_threw' | 'unsupported_type';

/** Thrown internally by `toPlain` when a value cannot be recorded faithfully. */
export class UnusableValue extends Error {
  constructor(
    readonly reason: UnusableReason,
    readonly path: string,
  ) {
    super(`${reason} at ${path || '(root)'}`);
  }
}

/**
 * Copies `value` into plain JSON data (objects, arrays, strings, finite numbers, booleans, null),
 * throwing `UnusableValue` for cycles, BigInts, throwing getters, functions and symbols.
 * Dates become ISO strings, Maps and Sets become objects and arrays; `undefined` fields are dropped.
 * Evidence must be data we can store and compare, so anything else is refused rather than guessed at.
 */
export function toPlain(value: unknown, path = '', seen?: Set<object>): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (value === undefined) return null;
  if (typeof value === 'bigint') throw new UnusableValue('bigint', path);
  if (typeof value !== 'object') throw new UnusableValue('unsupported_type', path);
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  // Made here rather than as a default parameter, so a primitive (most fields) allocates no Set.
  seen ??= new Set<object>();
  if (seen.has(value)) throw new UnusableValue('cycle', path);
  seen.add(value);
  try {
    if (Array.isArray(value) || value instanceof Set) {
      return Array.from(value as Iterable<unknown>, (item, i) => toPlain(item, `${path}[${i}]`, seen));
    }
    const entries: [string, unknown][] =
      value instanceof Map ? [...value.entries()].map(([k, v]) => [String(k), v]) : readEntries(value, path);
    const out: Record<string, unknown> = {};
    for (const [key, item] of entries) {
      if (item === undefined) continue;
      setOwn(out, key, toPlain(item, path ? `${path}.${key}` : key, seen));
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

function readEntries(value: object, path: string): [string, unknown][] {
  const entries: [string, unknown][] = [];
  for (const key of Object.keys(value)) {
    try {
      entries.push([key, (value as Record<string, unknown>)[key]]);
    } catch {
      throw new UnusableValue('getter_threw', path ? `${path}.${key}` : key);
    }
  }
  return entries;
}

/**
 * Throws `UnusableValue` exactly when `toPlain(value)` would, without building the copy when `value` is
 * already plain data (the usual observation): then there is nothing `toPlain` could refuse.
 */
export function requirePlain(value: unknown): void {
  let plain = false;
  try {
    plain = isPlainData(value, 0);
  } catch {
    // A throwing getter: `toPlain` names it.
  }
  if (!plain) toPlain(value);
}

// True for strings, finite numbers, booleans, null, and arrays and objects (prototype Object.prototype or
// null) made only of those, at most PLAIN_JSON_DEPTH deep; false for anything `toPlain` would convert or
// refuse (undefined, NaN, Dates, Maps, Sets, class instances, BigInts, functions, symbols, holes, cycles).
function isPlainData(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object': {
      if (value === null) return true;
      if (depth > PLAIN_JSON_DEPTH) return false;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          if (!(i in value) || !isPlainData(value[i], depth + 1)) return false;
        }
        return true;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      for (const key of Object.keys(value)) {
        if (!isPlainData((value as Record<string, unknown>)[key], depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

/** Like `toPlain`, but never throws: unusable parts are replaced by a marker string, for recording raw results. */
export function toRecordable(value: unknown): { value: unknown; unusable?: UnusableReason; path?: string } {
  try {
    return { value: toPlain(value) };
  } catch (error) {
    if (error instanceof UnusableValue) {
      return { value: `[unrecordable: ${error.message}]`, unusable: error.reason, path: error.path };
    }
    return { value: '[unrecordable]', unusable: 'unsupported_type' };
  }
}

/** JSON with object keys sorted at every depth, so equal data always yields equal text. */
export function canonicalJson(value: unknown): string {
  // Plain data (the usual input) is written in one pass; anything else takes the copying path, which also
  // raises the exact `UnusableValue` (reason and path) for data that cannot be recorded.
  try {
    const text = plainJson(value, 0, PLAIN_JSON_DEPTH);
    if (text !== undefined) return text;
  } catch {
    // A throwing getter: the copying path reports it.
  }
  // toPlain's copy is plain and acyclic, so it is written whole, with the same key order as above (an
  // object cannot hold integer-like keys in sorted order: JSON.stringify would put them first).
  return plainJson(toPlain(value), 0, Number.POSITIVE_INFINITY) as string;
}

// Past this depth the one-pass writer gives up, so a cycle ends up in `toPlain`, which names it.
const PLAIN_JSON_DEPTH = 100;

// The canonical text of `toPlain(value)` (keys sorted by UTF-16 code units at every depth), written without
// the copy, for strings, finite and non-finite numbers, booleans, null, arrays and objects whose prototype
// is Object.prototype or null, at most `maxDepth` deep; undefined for anything else (Dates, Maps, Sets,
// class instances, BigInts, functions, symbols, cycles).
function plainJson(value: unknown, depth: number, maxDepth: number): string | undefined {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      // toPlain keeps finite numbers and turns NaN and the infinities into their names, as strings.
      return Number.isFinite(value) ? JSON.stringify(value) : JSON.stringify(String(value));
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (depth > maxDepth) return undefined;
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++) {
          const item = value[i];
          // toPlain turns undefined items and holes into null.
          const text = item === undefined ? 'null' : plainJson(item, depth + 1, maxDepth);
          if (text === undefined) return undefined;
          out += i === 0 ? text : `,${text}`;
        }
        return `${out}]`;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return undefined;
      const keys = sortedInPlace(Object.keys(value));
      let out = '{';
      let first = true;
      for (const key of keys) {
        const item = (value as Record<string, unknown>)[key];
        if (item === undefined) continue;
        const text = plainJson(item, depth + 1, maxDepth);
        if (text === undefined) return undefined;
        out += `${first ? '' : ','}${JSON.stringify(key)}:${text}`;
        first = false;
      }
      return `${out}}`;
    }
    default:
      return undefined;
  }
}

// Objects here have a handful of keys, often already in order: an insertion sort of the array Object.keys
// made costs no second array, where Array.prototype.sort allocates a work copy. Same order (UTF-16 units).
function sortedInPlace(keys: string[]): string[] {
  if (keys.length > 32) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i]!;
    let j = i - 1;
    while (j >= 0 && keys[j]! > key) {
      keys[j + 1] = keys[j]!;
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}

/** SHA-256 hex of the canonical JSON of `value`. */
export function hashOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

// crypto.hash (Node ≥ 20.12) is a one-shot digest several times cheaper than a Hash object.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;
const sha256Hex = oneShot
  ? (text: string) => oneShot('sha256', text, 'hex')
  : (text: string) => crypto.createHash('sha256').update(text).digest('hex');

/** SHA-256 hex of a text, e.g. a `canonicalJson` the caller already has. */
export function hashText(text: string): string {
  return sha256Hex(text);
}

/** The intent fingerprint: a canonical hash of action, target, normalized input and scope. */
export function intentFingerprint(intent: {
  action: string;
  target: string;
  input: unknown;
  scope: Record<string, string>;
}): string {
  return hashOf(intent);
}

/**
 * `intentFingerprint` from the input's `canonicalJson` (undefined for an undefined input), for a caller
 * that already has that text: the intent's keys sort as action, input, scope, target, so its canonical
 * text is these parts in that order.
 */
export function fingerprintOf(
  action: string,
  target: string,
  inputJson: string | undefined,
  scope: Record<string, string>,
): string {
  const input = inputJson === undefined ? '' : `"input":${inputJson},`;
  const scopeJson = canonicalJson(scope);
  return sha256Hex(
    `{"action":${JSON.stringify(action)},${input}"scope":${scopeJson},"target":${JSON.stringify(target)}}`,
  );
}

/** Deep equality over plain data, used to compare expected and observed fields. */
export function plainEqual(a: unknown, b: unknown): boolean {
  // Equal strings, booleans and finite numbers have equal canonical texts; other pairs of these types
  // (including 0 and -0, both written 0) are settled by the texts as well.
  if (typeof a === 'string' && typeof b === 'string') return a === b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return a === b;
  if (typeof a === 'number' && typeof b === 'number' && Number.isFinite(a) && Number.isFinite(b)) {
    return a === b;
  }
  try {
    return canonicalJson(a) === canonicalJson(b);
  } catch {
    return false;
  }
}

/**
 * A deep copy of plain data (objects, arrays, primitives), falling back to `structuredClone` for
 * anything else (Dates, Maps); several times faster than `structuredClone` on records and completions.
 */
export function clonePlain<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(clonePlain) as T;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const item = clonePlain((value as Record<string, unknown>)[key]);
    if (key === '__proto__') setOwn(out, key, item);
    else out[key] = item;
  }
  return out as T;
}

// Plain assignment of "__proto__" would set the prototype and silently drop the key (and its data).
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}
