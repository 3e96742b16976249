/**
 * The identifiers a request, a call or a claim names, each with its shape (what kind of thing it
 * identifies), so only like is compared with like: "T-104" with "T-140", "order 43" with an `orderId`
 * of 42, never "T-104" with "v2". A bare number counts only next to the noun that says what it is.
 */
import { sameWord } from '../messages/words.js';

/** One identifier: its text and the kind of thing it names (`email`, `t`, `order`). */
export interface NamedId {
  value: string;
  shape: string;
}

// The lookbehind starts an address only where its run of address characters starts: without it, every
// position of a long run (a 5 MB argument) scanned to the run's end looking for '@', quadratic time.
const TOKEN_ID = /(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b[A-Za-z]+[-_#]?\d[\w-]*/g;
// "order 43", "order #43", "invoice no. 7", "ticket number 12": a noun, then a bare number.
const NOUN_NUMBER = /\b([A-Za-z]{3,})\s+(?:#\s*|no\.?\s*|number\s+)?(\d[\d-]*)(?![\w@])/gi;
// Words that stand before numbers without naming a kind of record ("about 40", "the last 3").
const NOT_NOUNS = new Set(
  'the and for with from than about over under last first next top all only every each after before within least most some into onto are was were has have had our your their its per'.split(
    ' ',
  ),
);

function tokenShape(id: string): string {
  return id.includes('@') ? 'email' : (/^[a-z]+[-_#]?/i.exec(id)?.[0]?.toLowerCase() ?? '');
}

function clean(value: string): string {
  return value.replace(/[.-]+$/, '');
}

/** Every identifier a text names: tokens such as `T-104` or `ana@example.com`, and numbers after a noun. */
export function idsInText(text: string): NamedId[] {
  const ids = [...text.matchAll(TOKEN_ID)].map((m) => {
    const value = clean(m[0]);
    return { value, shape: tokenShape(value) };
  });
  for (const m of text.matchAll(NOUN_NUMBER)) {
    const noun = m[1]!.toLowerCase();
    if (!NOT_NOUNS.has(noun)) ids.push({ value: clean(m[2]!), shape: noun });
  }
  return ids;
}

// `orderId`, `order_id`, `order_number` → `order`: what kind of record a numeric argument names.
function keyShape(key: string): string {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter((w) => w !== '');
  while (words.length > 1 && ['id', 'number', 'no', 'num', 'ref'].includes(words.at(-1)!)) words.pop();
  return words.at(-1) ?? '';
}

function visit(key: string, value: unknown, out: NamedId[]): void {
  if (typeof value === 'number' || (typeof value === 'string' && /^\d[\d-]*$/.test(value))) {
    out.push({ value: String(value), shape: keyShape(key) });
  } else if (typeof value === 'string') {
    out.push(...idsInText(value).filter((id) => /\d|@/.test(id.value)));
  } else if (Array.isArray(value)) {
    for (const v of value) visit(key, v, out);
  } else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) visit(k, v, out);
  }
}

/** Every identifier a call acts on: from its arguments (a number takes its key's noun) and its `kind:id` target. */
export function idsOfCall(args: Record<string, unknown>, target: string): NamedId[] {
  const out: NamedId[] = [];
  for (const [k, v] of Object.entries(args)) visit(k, v, out);
  const colon = target.lastIndexOf(':');
  if (colon > 0) visit(target.slice(0, colon), target.slice(colon + 1), out);
  return out;
}

/** True when two identifiers are of the same kind: `T-104`/`T-140`, `order`/`orders`. */
export function sameShape(a: NamedId, b: NamedId): boolean {
  return a.shape !== '' && b.shape !== '' && (a.shape === b.shape || sameWord(a.shape, b.shape));
}

/** True when two identifiers are the same value (case-insensitive; `#43` and `43` alike). */
export function sameValue(a: NamedId, b: NamedId): boolean {
  return a.value.toLowerCase() === b.value.toLowerCase();
}
