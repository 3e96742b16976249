// The shortcuts in canonical.ts must give exactly what the general paths give: the fingerprint from a
// canonical input text, the plain-data check before `toPlain`, and primitive equality in `plainEqual`.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  fingerprintOf,
  intentFingerprint,
  plainEqual,
  requirePlain,
  toPlain,
  UnusableValue,
} from '../../src/canonical.js';

// Values JSON can hold, plus what `toPlain` converts or refuses: undefined, NaN, -0, Dates, Maps, Sets,
// BigInts, class instances, functions, sparse arrays and null-prototype objects.
const odd = fc.oneof(
  fc.constant(undefined),
  fc.constant(Number.NaN),
  fc.constant(-0),
  fc.constant(Number.POSITIVE_INFINITY),
  fc.date({ noInvalidDate: false }),
  fc.bigInt(),
  fc.constant(() => 1),
  fc.constant(new (class Thing {})()),
  fc.constant(new Map([['a', 1]])),
  fc.constant(new Set([1, 2])),
  // A sparse array (a hole at index 1), built without a literal hole.
  fc.constant(Object.assign(new Array(3), { 0: 1, 2: 3 })),
  fc.constant(Object.assign(Object.create(null), { b: 2, a: 1 })),
);
const anyValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.jsonValue(),
    odd,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 6 }), tie('value'), { maxKeys: 5 }),
  ),
})).value;

/** What `fn` returned, or the reason and path of the `UnusableValue` it threw. */
function outcomeOf(fn: () => unknown): unknown {
  try {
    return { ok: fn() };
  } catch (error) {
    if (error instanceof UnusableValue) return { reason: error.reason, path: error.path };
    return { other: String(error) };
  }
}

describe('canonical fast paths', () => {
  it('fingerprintOf over the canonical input equals intentFingerprint of the whole intent', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.string({ minLength: 1 }),
        anyValue,
        fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 })),
        (action, target, input, scope) => {
          const whole = outcomeOf(() => intentFingerprint({ action, target, input, scope }));
          const parts = outcomeOf(() =>
            fingerprintOf(action, target, input === undefined ? undefined : canonicalJson(input), scope),
          );
          // Where the whole intent is refused, the input alone is refused too (its path lacks "input.").
          if ('ok' in (whole as object)) expect(parts).toEqual(whole);
          else expect('ok' in (parts as object)).toBe(false);
        },
      ),
      { numRuns: 5_000 },
    );
  });

  it('canonicalJson of a value is the canonicalJson of its plain copy, whichever path writes it', () => {
    fc.assert(
      fc.property(anyValue, (value) => {
        const copy = outcomeOf(() => toPlain(value));
        if (!('ok' in (copy as object))) return;
        expect(canonicalJson(value)).toBe(canonicalJson((copy as { ok: unknown }).ok));
      }),
      { numRuns: 5_000 },
    );
    // Integer-like keys sort as text on both paths (an object alone would list them first).
    const at = new Date(0);
    expect(canonicalJson({ '0': 1, '': 2, when: at })).toBe(`{"":2,"0":1,"when":"${at.toISOString()}"}`);
    expect(canonicalJson({ '0': 1, '': 2 })).toBe('{"":2,"0":1}');
  });

  it('requirePlain throws exactly when toPlain does, with the same reason and path', () => {
    fc.assert(
      fc.property(anyValue, (value) => {
        const copy = outcomeOf(() => toPlain(value));
        const check = outcomeOf(() => requirePlain(value));
        if ('ok' in (copy as object)) expect(check).toEqual({ ok: undefined });
        else expect(check).toEqual(copy);
      }),
      { numRuns: 5_000 },
    );
  });

  it('requirePlain refuses cycles, BigInts and throwing getters as toPlain does', () => {
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    const getter = Object.defineProperty({}, 'boom', {
      enumerable: true,
      get() {
        throw new Error('no');
      },
    });
    for (const value of [cycle, { n: 1n }, getter, [1, [2, Symbol('s')]]]) {
      expect(outcomeOf(() => requirePlain(value))).toEqual(outcomeOf(() => toPlain(value)));
      expect(outcomeOf(() => requirePlain(value))).not.toHaveProperty('ok');
    }
  });

  it('plainEqual gives what comparing canonical texts gives', () => {
    const texts = (a: unknown, b: unknown) => {
      try {
        return canonicalJson(a) === canonicalJson(b);
      } catch {
        return false;
      }
    };
    const primitive = fc.oneof(
      fc.string({ maxLength: 3 }),
      fc.double(),
      fc.integer({ min: -2, max: 2 }),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
      fc.constant('NaN'),
      fc.constant('Infinity'),
    );
    fc.assert(
      fc.property(fc.oneof(primitive, anyValue), fc.oneof(primitive, anyValue), (a, b) => {
        expect(plainEqual(a, b)).toBe(texts(a, b));
        expect(plainEqual(a, a)).toBe(texts(a, a));
      }),
      { numRuns: 10_000 },
    );
    expect(plainEqual(0, -0)).toBe(true);
    expect(plainEqual(Number.NaN, 'NaN')).toBe(texts(Number.NaN, 'NaN'));
  });
});
