import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, intentFingerprint } from '../../src/index.js';

/** Rebuilds `value` with every object's keys in a shuffled order, at every depth; arrays keep their order. */
function shuffleKeys(value: unknown, next: () => number): unknown {
  if (Array.isArray(value)) return value.map((item) => shuffleKeys(item, next));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value);
  for (let i = keys.length - 1; i > 0; i--) {
    const j = next() % (i + 1);
    [keys[i], keys[j]] = [keys[j]!, keys[i]!];
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    // defineProperty, so a generated "__proto__" key stays an own key instead of setting the prototype.
    Object.defineProperty(out, key, {
      value: shuffleKeys((value as Record<string, unknown>)[key], next),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** A deterministic stream of numbers from a seed (a small LCG), so shrinking stays reproducible. */
function stream(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state;
  };
}

type Path = (string | number)[];

/** Paths to every primitive leaf (string, number, boolean, null). */
function leaves(value: unknown, path: Path = []): Path[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => leaves(item, [...path, i]));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) => leaves(item, [...path, key]));
  }
  return [path];
}

/** A different leaf value whose JSON differs too (so -0 is not a "change" of 0). */
function changed(leaf: unknown): unknown {
  if (typeof leaf === 'string') return `${leaf}x`;
  if (typeof leaf === 'number') return leaf === 0 ? 1 : -leaf;
  if (typeof leaf === 'boolean') return !leaf;
  return 0;
}

function withLeaf(value: unknown, path: Path, update: (leaf: unknown) => unknown): unknown {
  if (path.length === 0) return update(value);
  const [head, ...rest] = path;
  if (Array.isArray(value)) return value.map((item, i) => (i === head ? withLeaf(item, rest, update) : item));
  const record = value as Record<string, unknown>;
  return { ...record, [head as string]: withLeaf(record[head as string], rest, update) };
}

function hasKey(value: unknown, key: string): boolean {
  if (Array.isArray(value)) return value.some((item) => hasKey(item, key));
  if (value === null || typeof value !== 'object') return false;
  return Object.keys(value).some((k) => k === key || hasKey((value as Record<string, unknown>)[k], key));
}

/**
 * True when every object's string keys are in sorted order. Integer-like keys ("0", "17") are left
 * out: JavaScript always lists them first, in numeric order, whatever the insertion order, so they
 * are canonical anyway.
 */
function isArrayIndex(key: string): boolean {
  const n = Number(key);
  return String(n >>> 0) === key && n !== 2 ** 32 - 1;
}

function keysSortedEverywhere(value: unknown): boolean {
  if (Array.isArray(value)) return value.every(keysSortedEverywhere);
  if (value === null || typeof value !== 'object') return true;
  const keys = Object.keys(value).filter((k) => !isArrayIndex(k));
  const sorted = [...keys].sort();
  return (
    keys.every((k, i) => k === sorted[i]) && Object.values(value).every((item) => keysSortedEverywhere(item))
  );
}

const scopeArb = fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }), { maxKeys: 4 });
// The known "__proto__" problem has its own test below; keep it out of the generic leaf properties.
const plainJson = fc.jsonValue().filter((v) => !hasKey(v, '__proto__'));

const intentOf = (input: unknown, scope: Record<string, string> = { tenant: 'acme' }) => ({
  action: 'update_ticket',
  target: 'ticket:T-104',
  input,
  scope,
});

describe('intentFingerprint', () => {
  it('is invariant to object key order at any depth (fc.object)', () => {
    fc.assert(
      fc.property(fc.object({ maxDepth: 4 }), scopeArb, fc.integer(), (input, scope, seed) => {
        const next = stream(seed);
        const a = intentFingerprint(intentOf(input, scope));
        const b = intentFingerprint(
          intentOf(shuffleKeys(input, next), shuffleKeys(scope, next) as Record<string, string>),
        );
        expect(b).toBe(a);
        expect(a).toMatch(/^[0-9a-f]{64}$/);
      }),
      { numRuns: 500 },
    );
  });

  it('is invariant to object key order at any depth (fc.jsonValue)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 5 }), fc.integer(), (input, seed) => {
        expect(intentFingerprint(intentOf(shuffleKeys(input, stream(seed))))).toBe(
          intentFingerprint(intentOf(input)),
        );
      }),
      { numRuns: 500 },
    );
  });

  it('changes when any leaf value of the input changes', () => {
    const withLeaves = plainJson.filter((v) => leaves(v).length > 0);
    fc.assert(
      fc.property(withLeaves, fc.nat(), fc.integer(), (input, pick, seed) => {
        const paths = leaves(input);
        const path = paths[pick % paths.length]!;
        const mutated = withLeaf(input, path, changed);
        expect(intentFingerprint(intentOf(shuffleKeys(mutated, stream(seed))))).not.toBe(
          intentFingerprint(intentOf(input)),
        );
      }),
      { numRuns: 500 },
    );
  });

  it('changes with the action, the target or the scope', () => {
    fc.assert(
      fc.property(plainJson, fc.string({ minLength: 1, maxLength: 8 }), (input, tenant) => {
        const base = intentFingerprint(intentOf(input, { tenant }));
        expect(intentFingerprint({ ...intentOf(input, { tenant }), action: 'close_ticket' })).not.toBe(base);
        expect(intentFingerprint({ ...intentOf(input, { tenant }), target: 'ticket:T-105' })).not.toBe(base);
        expect(intentFingerprint(intentOf(input, { tenant: `${tenant}x` }))).not.toBe(base);
        expect(intentFingerprint(intentOf(input, { tenant, region: 'eu' }))).not.toBe(base);
      }),
      { numRuns: 200 },
    );
  });

  it('tells an input apart from the same input nested one level deeper or moved to another field', () => {
    const a = intentFingerprint(intentOf({ id: 'T-1', status: 'resolved' }));
    expect(intentFingerprint(intentOf({ data: { id: 'T-1', status: 'resolved' } }))).not.toBe(a);
    expect(intentFingerprint(intentOf({ id: 'T-1', state: 'resolved' }))).not.toBe(a);
    expect(intentFingerprint(intentOf([{ id: 'T-1', status: 'resolved' }]))).not.toBe(a);
    expect(intentFingerprint(intentOf({ id: 'T-1', status: ['resolved'] }))).not.toBe(a);
  });

  // Regression: an own "__proto__" key (JSON.parse makes them from request bodies) once vanished from
  // the canonical JSON, so two different inputs shared a fingerprint and a default idempotency key.
  it('keeps an own "__proto__" key in the fingerprint', () => {
    const plain = JSON.parse('{"id":"T-1"}');
    const withProto = JSON.parse('{"id":"T-1","__proto__":{"admin":true}}');
    const withPrimitive = JSON.parse('{"id":"T-1","__proto__":1}');
    expect(canonicalJson(withProto)).toBe('{"__proto__":{"admin":true},"id":"T-1"}');
    expect(intentFingerprint(intentOf(withProto))).not.toBe(intentFingerprint(intentOf(plain)));
    expect(intentFingerprint(intentOf(withPrimitive))).not.toBe(intentFingerprint(intentOf(plain)));
  });
});

describe('canonicalJson', () => {
  it('is stable: the same value, copies of it and key-shuffled copies give the same text', () => {
    fc.assert(
      fc.property(plainJson, fc.integer(), (value, seed) => {
        const text = canonicalJson(value);
        expect(canonicalJson(value)).toBe(text);
        expect(canonicalJson(structuredClone(value))).toBe(text);
        expect(canonicalJson(shuffleKeys(value, stream(seed)))).toBe(text);
      }),
      { numRuns: 500 },
    );
  });

  it('is a fixed point, sorts keys at every depth, and loses no JSON data', () => {
    fc.assert(
      fc.property(plainJson, (value) => {
        const text = canonicalJson(value);
        const parsed: unknown = JSON.parse(text);
        expect(canonicalJson(parsed)).toBe(text);
        expect(keysSortedEverywhere(parsed)).toBe(true);
        expect(parsed).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 500 },
    );
  });

  it('does not depend on insertion order for known examples', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[{"y":2,"z":1}]},"b":1}',
    );
    expect(canonicalJson({ a: undefined, b: new Date(0) })).toBe('{"b":"1970-01-01T00:00:00.000Z"}');
  });

  it('refuses what it cannot record faithfully', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => canonicalJson(cycle)).toThrow(/cycle/);
    expect(() => canonicalJson({ n: 1n })).toThrow(/bigint/);
    // A shared (non-cyclic) reference is fine.
    const shared = { x: 1 };
    expect(canonicalJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
  });
});
