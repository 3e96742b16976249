import type { StandardSchemaV1 } from '../schema.js';

type FieldKind = 'string' | 'number' | 'integer' | 'email' | readonly string[] | { array: FieldKind };
type FieldSpec = FieldKind | { kind: FieldKind; optional: true };

type TypeOf<K> = K extends 'string' | 'email'
  ? string
  : K extends 'number' | 'integer'
    ? number
    : K extends readonly (infer E)[]
      ? E
      : K extends { array: infer A }
        ? TypeOf<A>[]
        : never;

type Shape<S extends Record<string, FieldSpec>> = {
  [K in keyof S as S[K] extends { optional: true } ? never : K]: TypeOf<S[K]>;
} & {
  [K in keyof S as S[K] extends { optional: true } ? K : never]?: S[K] extends { kind: infer T }
    ? TypeOf<T>
    : never;
};

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/**
 * A tiny Standard Schema object validator for the built-in fakes and demo, so `readback/testing`
 * needs no schema library. Real applications should use zod, valibot or arktype.
 */
export function schema<const S extends Record<string, FieldSpec>>(
  spec: S,
): StandardSchemaV1<unknown, Shape<S>> {
  return {
    '~standard': {
      version: 1,
      vendor: 'readback-testing',
      validate(value) {
        if (typeof value !== 'object' || value === null || Array.isArray(value)) {
          return { issues: [{ message: 'expected an object' }] };
        }
        const issues: { message: string; path: PropertyKey[] }[] = [];
        const out: Record<string, unknown> = {};
        for (const [key, field] of Object.entries(spec)) {
          const optional = typeof field === 'object' && 'optional' in field;
          const kind = optional ? (field as { kind: FieldKind }).kind : (field as FieldKind);
          const item = (value as Record<string, unknown>)[key];
          if (item === undefined && optional) continue;
          const problem = check(kind, item, [key], issues);
          if (!problem) out[key] = item;
        }
        for (const key of Object.keys(value)) {
          if (!(key in spec)) issues.push({ message: 'unexpected field', path: [key] });
        }
        return issues.length ? { issues } : { value: out as Shape<S> };
      },
    },
  };
}

function check(
  kind: FieldKind,
  value: unknown,
  path: PropertyKey[],
  issues: { message: string; path: PropertyKey[] }[],
) {
  const before = issues.length;
  const fail = (message: string) => issues.push({ message, path });
  if (Array.isArray(kind)) {
    if (!kind.includes(value as string)) fail(`expected one of ${kind.join(', ')}`);
  } else if (typeof kind === 'object' && 'array' in kind) {
    if (!Array.isArray(value)) fail('expected an array');
    else {
      for (const [i, item] of value.entries()) check(kind.array, item, [...path, i], issues);
    }
  } else if (kind === 'string') {
    if (typeof value !== 'string' || value === '') fail('expected a non-empty string');
  } else if (kind === 'email') {
    if (typeof value !== 'string' || !EMAIL.test(value)) fail('expected an email address');
  } else if (kind === 'number') {
    if (typeof value !== 'number' || !Number.isFinite(value)) fail('expected a finite number');
  } else if (kind === 'integer') {
    if (!Number.isInteger(value)) fail('expected a whole number');
  }
  return issues.length > before;
}
