import { toRecordable } from '../canonical.js';
import { unknownField } from '../contract/fields.js';
import { optionalBoolean, optionalFunction, ReadbackError } from '../errors.js';
import { looksLikeCardNumber, mayHoldSecret, SECRET_KEY, scanSecrets } from './secrets.js';

export { firstSecretMatch, mayHoldSecret, scanSecrets } from './secrets.js';

/**
 * One redaction rule. A `key` rule replaces the whole value under a matching object key; a `value` rule
 * replaces every match inside any string. `replace` builds the replacement (default `[redacted:<name>]`).
 * A rule that throws fails closed: a throwing `key` function counts as a match, and a throwing `replace`
 * gives `[redacted:<name>]` for the whole value or string it was given.
 */
export interface RedactionRule {
  name: string;
  key?: RegExp | ((key: string) => boolean);
  value?: RegExp;
  replace?: (secret: string) => string;
}

/** Redaction settings: the built-in rules (on unless `defaults: false`) plus your own. */
export interface RedactionOptions {
  defaults?: boolean;
  rules?: RedactionRule[];
}

/** Applies redaction rules to plain data; the input is never changed, and clean parts are shared, not copied. */
export interface Redactor {
  redact<T>(value: T): T;
  /** Like `redact`, but copies the named top-level fields as they are (fields the runner itself produced). */
  redactExcept<T extends object>(value: T, keep: ReadonlySet<string>): T;
  /** Redacts the value of one field named `key`: key rules see the name, as they would inside an object. */
  redactField(key: string, value: unknown): unknown;
}

const KEY_CACHE_LIMIT = 1024;

/** A redactor that also takes data known to be plain: what the run record uses. */
export interface PlainRedactor extends Redactor {
  /**
   * `redactField` for a value `toPlain` made (objects of Object.prototype, no symbol keys, no class instances):
   * what such data cannot hold is not looked for.
   */
  redactPlainField(key: string, value: unknown): unknown;
}

/** Creates a redactor from the built-in rules (unless disabled) and the given ones. */
export function createRedactor(options: RedactionOptions = {}): PlainRedactor {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ReadbackError('invalid_options', 'expected { defaults?, rules? }', 'trace.redaction');
  }
  // A misspelt field (`rule: […]`) would drop your rules in silence, and with them what they were to hide.
  closedShape(options, ['defaults', 'rules'], 'trace.redaction', 'a redaction option');
  optionalBoolean(options.defaults, 'trace.redaction.defaults');
  if (options.rules !== undefined && !Array.isArray(options.rules)) {
    throw new ReadbackError('invalid_options', 'must be an array of rules', 'trace.redaction.rules');
  }
  const defaults = options.defaults !== false;
  const rules = (options.rules ?? []).map((rule, i) => checkRule(rule, i));
  const keyRules = rules.filter((r) => r.key);
  const valueRules = rules.filter((r) => r.value);
  // Keys repeat across events (status, reason, …): remember each key's verdict.
  const keyCache = new Map<string, KeyVerdict>();

  function keyVerdict(key: string): KeyVerdict {
    const known = keyCache.get(key);
    if (known !== undefined) return known;
    let rule: RedactionRule | 'default' | null = null;
    for (const keyRule of keyRules) {
      if (keyMatches(keyRule, key)) {
        rule = keyRule;
        break;
      }
    }
    if (!rule && defaults && SECRET_KEY.test(key)) rule = 'default';
    // A key can be a secret itself (sessions or rate limits keyed by their token): it is scanned as text.
    const verdict = { rule, text: redactString(key), spaced: SPACED.test(key) };
    if (keyCache.size < KEY_CACHE_LIMIT) keyCache.set(key, verdict);
    return verdict;
  }

  function secretKey(key: string): RedactionRule | 'default' | null {
    return keyVerdict(key).rule;
  }

  function redactString(text: string): string {
    // JSON text (a tool's result as text, a response body) is redacted as the data it encodes, so key rules see
    // its keys: `{"client_secret":"…"}` is as secret as `{ client_secret: '…' }`.
    if (looksLikeJson(text)) {
      const redacted = redactJsonText(text);
      if (redacted !== undefined) return applyValueRules(redacted);
    }
    let out = text;
    // Even a short text is checked: `pwd=abc` and `sig=x1` are whole secrets (the prefilter is cheap for them).
    if (defaults && mayHoldSecret(out)) out = scanSecrets(out);
    return applyValueRules(out);
  }

  // The JSON text with its data redacted, or undefined when it is not JSON or nothing in it changed.
  function redactJsonText(text: string): string | undefined {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      return undefined;
    }
    const redacted = walk(data, 1, true);
    return redacted === data ? undefined : JSON.stringify(redacted);
  }

  function applyValueRules(text: string): string {
    let out = text;
    for (const rule of valueRules) {
      try {
        out = out.replace(rule.value as RegExp, (m) =>
          rule.replace ? rule.replace(m) : `[redacted:${rule.name}]`,
        );
      } catch {
        // A rule that throws cannot say what is safe to keep: the whole string goes (fail closed).
        return `[redacted:${rule.name}]`;
      }
    }
    return out;
  }

  // Copy-on-write: parts with nothing to redact are returned as they are, so clean events allocate little.
  // `plain`: the value is plain data as `toPlain` or `JSON.parse` makes it (objects of Object.prototype, no
  // symbol keys), so neither is looked for: reading an object's symbol keys costs more than the rest of its walk.
  function walk(value: unknown, depth: number, plain: boolean, keep?: ReadonlySet<string>): unknown {
    if (typeof value === 'string') return redactString(value);
    if (typeof value === 'number')
      return defaults && looksLikeCardNumber(value) ? '[redacted:card_number]' : value;
    if (value === null || typeof value !== 'object') return value;
    if (depth > 64) return '[redacted:too_deep]';
    if (Array.isArray(value)) {
      // `[['Authorization', '…'], …]` (Object.entries, a Headers object spread, a Map's entries) is a list of
      // fields: each pair's value is redacted by its name, as in an object.
      const entries = Array.isArray(value[0]) && value.every(isEntry);
      let copy: unknown[] | undefined;
      for (let i = 0; i < value.length; i++) {
        const item = entries ? redactPair(value[i], depth + 1, plain) : walk(value[i], depth + 1, plain);
        if (item !== value[i]) copy ??= value.slice();
        if (copy) copy[i] = item;
      }
      return copy ?? value;
    }
    const proto = plain ? null : Object.getPrototypeOf(value);
    // A Map, Set, URL, Date or class instance is replaced by the data a sink would write for it (what its
    // `toJSON` gives, else its entries or own fields), and that is redacted: a sink must not get the object
    // itself, whose entries or `toJSON` text (a URL's password) nothing here has read.
    if (proto !== Object.prototype && proto !== null) return walk(plainOf(value), depth + 1, false);
    const source = value as Record<string, unknown>;
    const keys = Object.keys(source);
    let out: Record<string, unknown> | undefined;
    // The rule named by the object's label, for `{ name: 'X-Api-Key', value }` pairs and checks (`expected`,
    // `observed`): undefined until a paired field is met, null when the label names no secret.
    let pair: RedactionRule | 'default' | null | undefined;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (keep?.has(key)) continue;
      const item = source[key];
      const { rule, text } = keyVerdict(key);
      if (pair === undefined && PAIRED_FIELDS.has(key)) pair = pairRule(source);
      const redacted =
        pair && PAIRED_FIELDS.has(key)
          ? redactWith(pair, item)
          : rule
            ? redactWith(rule, item)
            : walk(item, depth + 1, plain);
      if (redacted === item && text === key) continue;
      out ??= copyOf(source, keys);
      if (text !== key) Reflect.deleteProperty(out, key);
      setOwn(out, text === key ? key : freeKey(out, text), redacted);
    }
    // Symbol keys: JSON drops them, but a callback sink gets the object itself. Key rules see the description.
    const symbols = plain ? NO_SYMBOLS : Object.getOwnPropertySymbols(source);
    if (symbols.length > 0) {
      return redactSymbols(source, symbols, out ?? copyOf(source, keys), depth) ?? out ?? value;
    }
    return out ?? value;
  }

  // Writes the object's symbol-keyed values, redacted, into `copy` (its string-keyed fields, redacted) and returns
  // it, or undefined when none of them changed. Apart from `walk` because closures there would make every walk call
  // allocate a context for the variables they capture.
  function redactSymbols(
    source: object,
    symbols: readonly symbol[],
    copy: Record<string, unknown>,
    depth: number,
  ): Record<string, unknown> | undefined {
    const bySymbol = source as Record<symbol, unknown>;
    let changed = false;
    const redacted = symbols.map((symbol) => {
      const item = redactEntry(symbol.description ?? '', bySymbol[symbol], depth);
      if (item !== bySymbol[symbol]) changed = true;
      return item;
    });
    // A copy keeps every symbol-keyed value, redacted.
    for (let i = 0; i < symbols.length; i++) (copy as Record<symbol, unknown>)[symbols[i]!] = redacted[i];
    return changed ? copy : undefined;
  }

  // One `[name, value]` pair of a list of fields, its name redacted as a key: copied only when either changes.
  function redactPair(pair: unknown, depth: number, plain: boolean): unknown {
    const [name, item] = pair as [string, unknown];
    const { rule, text, spaced } = keyVerdict(name);
    const redacted = rule && !spaced ? redactWith(rule, item) : walk(item, depth + 1, plain);
    return redacted === item && text === name ? pair : [text, redacted];
  }

  // The rule a `{ name | key | Name | Key: <string>, … }` object's label names, if any. A label with spaces
  // names a thing ("Secret Garden"), not a field, header or parameter.
  function pairRule(source: Record<string, unknown>): RedactionRule | 'default' | null {
    for (const field of LABEL_FIELDS) {
      const label = source[field];
      if (typeof label !== 'string') continue;
      const { rule, spaced } = keyVerdict(label);
      return spaced ? null : rule;
    }
    return null;
  }

  function redactEntry(key: string, item: unknown, depth: number, plain = false): unknown {
    const rule = secretKey(key);
    if (rule === null) return walk(item, depth + 1, plain);
    return redactWith(rule, item);
  }

  function redactWith(rule: RedactionRule | 'default', item: unknown): unknown {
    if (item === null || item === undefined) return item;
    if (rule === 'default') return '[redacted]';
    if (!rule.replace) return `[redacted:${rule.name}]`;
    try {
      return rule.replace(typeof item === 'string' ? item : JSON.stringify(item));
    } catch {
      return `[redacted:${rule.name}]`;
    }
  }

  return {
    redact: <T>(value: T) => walk(value, 0, false) as T,
    redactExcept: <T extends object>(value: T, keep: ReadonlySet<string>) => walk(value, 0, false, keep) as T,
    redactField: (key: string, value: unknown) => redactEntry(key, value, 0),
    redactPlainField: (key: string, value: unknown) => redactEntry(key, value, 0, true),
  };
}

// The fields that carry the value of a labelled pair: HTTP headers and tags (`{ name, value }`, `{ Key, Value }`),
// and checks (`{ name, expected, observed }`).
const PAIRED_FIELDS: ReadonlySet<string> = new Set(['value', 'Value', 'expected', 'observed']);
const NO_SYMBOLS: readonly symbol[] = [];
const LABEL_FIELDS = ['name', 'key', 'Name', 'Key'];
const SPACED = /\s/;

// A `[name, value]` pair whose name is a string.
function isEntry(item: unknown): boolean {
  return Array.isArray(item) && item.length === 2 && typeof item[0] === 'string';
}

// The start of JSON text worth parsing: an object, or an array of values (a `[redacted:…]` or `[unrecordable: …]`
// marker is not parsed).
const JSON_START = /^(?:\{\s*["}]|\[\s*(?:[-"{[\]\d]|true|false|null))/;

function looksLikeJson(text: string): boolean {
  const first = text.charCodeAt(0);
  return (first === 123 || first === 91) && JSON_START.test(text);
}

// What JSON.stringify would write for a non-plain object, as data: its `toJSON` result, else its entries (Map,
// Set) or own enumerable fields. A `toJSON` that throws gives a marker rather than failing the whole field.
function plainOf(value: object): unknown {
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON !== 'function') return toRecordable(value).value;
  try {
    return toJSON.call(value, '');
  } catch {
    return '[redacted:unreadable]';
  }
}

// Whether a key rule names `key`. A key function that throws counts as a match: what it guards is then
// redacted rather than shown (fail closed), and the run that is being traced is never disturbed.
function keyMatches(rule: RedactionRule, key: string): boolean {
  try {
    return Boolean(typeof rule.key === 'function' ? rule.key(key) : (rule.key as RegExp).test(key));
  } catch {
    return true;
  }
}

// What a key rule decided for a key, the key as text scanned for secrets, and whether it reads as prose.
interface KeyVerdict {
  rule: RedactionRule | 'default' | null;
  text: string;
  /** Whether it has whitespace: a label with spaces names a thing, not a field (see `pairRule`). */
  spaced: boolean;
}

// `name`, or `name (2)`, `name (3)`, …: the first not yet a key of `out` (two redacted keys may read alike).
function freeKey(out: Record<string, unknown>, name: string): string {
  let key = name;
  for (let n = 2; Object.hasOwn(out, key); n++) key = `${name} (${n})`;
  return key;
}

// A shallow copy of the named fields, to write redacted values into.
function copyOf(source: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let j = 0; j < keys.length; j++) setOwn(out, keys[j]!, source[keys[j]!]);
  return out;
}

// Plain assignment of "__proto__" would set the prototype and drop the key.
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

function checkRule(rule: RedactionRule, i: number): RedactionRule {
  const field = `trace.redaction.rules[${i}]`;
  if (typeof rule !== 'object' || rule === null || typeof rule.name !== 'string' || rule.name === '') {
    throw new ReadbackError('invalid_options', 'a rule needs a non-empty name', `${field}.name`);
  }
  closedShape(rule, ['name', 'key', 'value', 'replace'], field, 'a rule field');
  if (!rule.key && !rule.value) {
    throw new ReadbackError('invalid_options', 'a rule needs a key or a value pattern', field);
  }
  if (rule.key && !(rule.key instanceof RegExp) && typeof rule.key !== 'function') {
    throw new ReadbackError('invalid_options', 'must be a RegExp or a function', `${field}.key`);
  }
  if (rule.value && !(rule.value instanceof RegExp)) {
    throw new ReadbackError('invalid_options', 'must be a RegExp', `${field}.value`);
  }
  optionalFunction(rule.replace, `${field}.replace`);
  // A pattern that matches empty text puts a marker between every two characters of every string.
  if (rule.value && new RegExp(rule.value.source, rule.value.flags.replace(/[gy]/g, '')).test('')) {
    throw new ReadbackError('invalid_options', 'must not match empty text', `${field}.value`);
  }
  // A value pattern must replace every match, so it is always global and never sticky (a sticky one would stop
  // at the first text that does not match); a key pattern must not keep state.
  const value =
    rule.value && (!rule.value.global || rule.value.sticky)
      ? new RegExp(rule.value.source, `${rule.value.flags.replace(/[gy]/g, '')}g`)
      : rule.value;
  const key =
    rule.key instanceof RegExp && (rule.key.global || rule.key.sticky)
      ? new RegExp(rule.key.source, rule.key.flags.replace(/[gy]/g, ''))
      : rule.key;
  return { ...rule, ...(value ? { value } : {}), ...(key ? { key } : {}) };
}

// Throws for a field of `value` not in `known`, naming it and the field it most likely misspells.
function closedShape(value: object, known: readonly string[], field: string, what: string): void {
  const unknown = unknownField(value, known);
  if (unknown) {
    throw new ReadbackError('invalid_options', `is not ${what}${unknown.hint}`, `${field}.${unknown.key}`);
  }
}
