import { toRecordable } from '../canonical.js';
import { unknownField } from '../contract/fields.js';
import { optionalBoolean, optionalFunction, ReadbackError } from '../errors.js';

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

// Keys whose values are secrets whatever they look like. `pass` alone is not here: checks carry `pass`.
const SECRET_KEY =
  /passw(?:or)?d|passphrase|^pwd$|secret|token|api[-_]?key|access[-_]?key|private[-_]?key|authori[sz]ation|^auth$|cookie|session[-_]?(?:id|key)|credential|card[-_]?(?:number|num|no)$|^(?:pan|cvv2?|cvc|ssn)$|signature/i;

// The keywords of `name=value` assignments, in the spellings found in real messages (see `cases`): config
// lines, query strings (`X-Amz-Signature=`, `sig=`), headers (`X-Api-Key:`, `Cookie:`) and JSON text.
// Each ends in a letter (see `assignmentBefore`).
const ASSIGNMENT_KEYS = [
  ...[
    'passwd',
    'password',
    'pwd',
    'passphrase',
    'secret',
    'secret_key',
    'secretKey',
    'private_key',
    'privateKey',
    'token',
    'api_key',
    'api-key',
    'apikey',
    'apiKey',
    'access_key',
    'access-key',
    'accessKey',
    'signature',
    'sig',
    'cookie',
  ].flatMap(cases),
  'Api-Key',
];

// One alternation, scanned once per string; each group names the kind of secret it found. No `i` flag and no
// leading lookbehinds: every branch starts with a literal or a digit, which keeps the scan about 30% cheaper.
// A new branch needs its own clause in `mayHoldSecret`, which decides which strings this scan can skip.
const SECRET_VALUE = new RegExp(
  [
    // A block cut short (a truncated message) has no END line: everything after its BEGIN line goes.
    '(?<private_key>-----BEGIN [A-Z ]*PRIVATE KEY[A-Z ]*-----(?:[\\s\\S]*?-----END [A-Z ]*PRIVATE KEY[A-Z ]*-----|[\\s\\S]*))',
    '(?<bearer>(?:[Bb]earer|BEARER)\\s+[A-Za-z0-9\\-._~+/]{8,}=*)',
    // Basic credentials are base64, so a digit, '+', '/' or '=' tells them from the word "basic" in prose.
    '(?<basic_auth>(?:[Bb]asic|BASIC)\\s+(?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2})',
    '(?<jwt>eyJ[A-Za-z0-9_-]{5,}\\.[A-Za-z0-9_-]{5,}\\.[A-Za-z0-9_-]*)',
    '(?<api_key>(?:sk|rk|pk|SK|RK|PK)[-_](?:live[-_]|test[-_]|proj[-_]|ant[-_])?[A-Za-z0-9_-]{16,})',
    '(?<aws_key>A[KS]IA[0-9A-Z]{16})',
    '(?<github_token>gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})',
    '(?<slack_token>xox[abposr]-[A-Za-z0-9-]{10,})',
    '(?<google_key>AIza[0-9A-Za-z_-]{35})',
    // The user name may be empty (`redis://:password@host`).
    '(?<url_credentials>://[^\\s:/@]*:[^\\s/@]+@)',
    // The keyword may be a quoted JSON key (`"password": "…"`, or `\\"password\\"` in JSON inside JSON), and a
    // quoted value goes whole, spaces and all, up to its closing quote (or the end of a cut-short text).
    `(?<assignment>(?:${ASSIGNMENT_KEYS.join('|')})(?:\\\\?["'])?\\s*[=:]\\s*(?:\\\\?"(?:[^"\\\\]|\\\\[^"])*(?:\\\\?")?|'[^']*'?|[^\\s,;&"']+))`,
    // Starts only where a token starts: a digit inside a word ("a1 4111…") would otherwise begin a
    // candidate that is refused as a whole, and the scan would resume after the real card.
    '(?<card_number>(?<![\\w.-])\\d(?:[ -]?\\d){12,18})',
  ].join('|'),
  'g',
);

// `password`, `Password` and `PASSWORD`: the spellings found in real messages, without a slower `i` flag.
function cases(word: string): string[] {
  return [word, word[0]!.toUpperCase() + word.slice(1), word.toUpperCase()];
}

// The prefilter (`mayHoldSecret`) checks what every match of some SECRET_VALUE branch must contain. The full scan
// costs ~4 ns a character (12 branches with no common prefix); these checks cost about half as much, and a typical
// completion message fails all of them, so it skips the scan. First, the opening literal of each branch but the
// last two (or a part of it: `[kK][-_]` for the API keys).
const SECRET_OPENING =
  /-----BEGIN |[Bb]earer|BEARER|[Bb]asic|BASIC|eyJ|[kK][-_]|A[KS]IA|gh[pousr]_|github_pat_|xox[abposr]-|AIza|:\/\//;
// 13 digits, each pair apart by at most one space or dash: the card branch without its lookbehind. Written out
// rather than as `(?:[ -]?\d){12}`, which V8 scans about 6x slower in prose with dates and ids.
const CARD_DIGITS = new RegExp(`\\d${'[ -]?\\d'.repeat(12)}`);
// The assignment keywords by their last character: a keyword must end right before the spaces before '=' or ':'.
const KEYS_BY_LAST = new Map<number, string[]>();
for (const key of ASSIGNMENT_KEYS) {
  const last = key.charCodeAt(key.length - 1);
  KEYS_BY_LAST.set(last, [...(KEYS_BY_LAST.get(last) ?? []), key]);
}
const SPACE = /\s/;

/**
 * Whether the built-in scan could find anything in `text`: false proves that SECRET_VALUE has no match there, so
 * the scan is skipped. Internal (exported for the tests that hold it to the full scan).
 */
export function mayHoldSecret(text: string): boolean {
  return (
    SECRET_OPENING.test(text) ||
    CARD_DIGITS.test(text) ||
    assignmentBefore(text, ':') ||
    assignmentBefore(text, '=')
  );
}

// Whether an assignment keyword, then an optional closing quote (itself optionally escaped), then only whitespace,
// comes right before some `sign` in the text. Every keyword ends in a letter, so it ends exactly where that quote
// or whitespace starts.
function assignmentBefore(text: string, sign: string): boolean {
  for (let at = text.indexOf(sign); at !== -1; at = text.indexOf(sign, at + 1)) {
    let end = at;
    while (end > 0 && isSpace(text.charCodeAt(end - 1))) end--;
    const quote = text.charCodeAt(end - 1);
    if (quote === 34 || quote === 39) {
      end--;
      if (text.charCodeAt(end - 1) === 92) end--;
    }
    const keys = KEYS_BY_LAST.get(text.charCodeAt(end - 1));
    if (keys?.some((key) => end >= key.length && text.startsWith(key, end - key.length))) return true;
  }
  return false;
}

// The regex `\s`, without building a one-character string for the common ASCII characters.
function isSpace(code: number): boolean {
  if (code < 128) return code === 32 || (code >= 9 && code <= 13);
  return SPACE.test(String.fromCharCode(code));
}

/** The built-in value rules applied to one string, with no prefilter. Internal (the tests' reference too). */
export function scanSecrets(text: string): string {
  return text.replace(SECRET_VALUE, replaceDefault);
}

/** The first match of the full scan, even one it keeps as it is (digits failing Luhn). Internal, for tests. */
export function firstSecretMatch(text: string): string | undefined {
  return text.match(SECRET_VALUE)?.[0];
}

// Shorter strings cannot hold any built-in secret pattern, so they skip the scan.
const MIN_SECRET_LENGTH = 8;
const KEY_CACHE_LIMIT = 1024;

/** Creates a redactor from the built-in rules (unless disabled) and the given ones. */
export function createRedactor(options: RedactionOptions = {}): Redactor {
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
  const keyCache = new Map<string, RedactionRule | 'default' | null>();

  function secretKey(key: string): RedactionRule | 'default' | null {
    const known = keyCache.get(key);
    if (known !== undefined) return known;
    let found: RedactionRule | 'default' | null = null;
    for (const rule of keyRules) {
      if (keyMatches(rule, key)) {
        found = rule;
        break;
      }
    }
    if (!found && defaults && SECRET_KEY.test(key)) found = 'default';
    if (keyCache.size < KEY_CACHE_LIMIT) keyCache.set(key, found);
    return found;
  }

  function redactString(text: string): string {
    // JSON text (a tool's result as text, a response body) is redacted as the data it encodes, so key rules see
    // its keys: `{"client_secret":"…"}` is as secret as `{ client_secret: '…' }`.
    if (looksLikeJson(text)) {
      const redacted = redactJsonText(text);
      if (redacted !== undefined) return applyValueRules(redacted);
    }
    let out = text;
    if (defaults && out.length >= MIN_SECRET_LENGTH && mayHoldSecret(out)) out = scanSecrets(out);
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
    const redacted = walk(data, 1);
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
  function walk(value: unknown, depth: number, keep?: ReadonlySet<string>): unknown {
    if (typeof value === 'string') return redactString(value);
    if (typeof value === 'number')
      return defaults && looksLikeCardNumber(value) ? '[redacted:card_number]' : value;
    if (value === null || typeof value !== 'object') return value;
    if (depth > 64) return '[redacted:too_deep]';
    if (Array.isArray(value)) {
      let copy: unknown[] | undefined;
      for (let i = 0; i < value.length; i++) {
        const item = walk(value[i], depth + 1);
        if (item !== value[i]) copy ??= value.slice();
        if (copy) copy[i] = item;
      }
      return copy ?? value;
    }
    const proto = Object.getPrototypeOf(value);
    // A Map, Set, URL, Date or class instance is replaced by the data a sink would write for it (what its
    // `toJSON` gives, else its entries or own fields), and that is redacted: a sink must not get the object
    // itself, whose entries or `toJSON` text (a URL's password) nothing here has read.
    if (proto !== Object.prototype && proto !== null) return walk(plainOf(value), depth + 1);
    const source = value as Record<string, unknown>;
    const keys = Object.keys(source);
    let out: Record<string, unknown> | undefined;
    // The rule named by the object's label, for `{ name: 'X-Api-Key', value }` pairs and checks (`expected`,
    // `observed`): undefined until a paired field is met, null when the label names no secret.
    let pair: RedactionRule | 'default' | null | undefined;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      const item = source[key];
      if (keep?.has(key)) continue;
      if (pair === undefined && PAIRED_FIELDS.has(key)) pair = pairRule(source);
      const redacted =
        pair && PAIRED_FIELDS.has(key) ? redactWith(pair, item) : redactEntry(key, item, depth);
      if (redacted === item) continue;
      if (!out) {
        out = {};
        for (let j = 0; j < keys.length; j++) setOwn(out, keys[j]!, source[keys[j]!]);
      }
      setOwn(out, key, redacted);
    }
    return out ?? value;
  }

  // The rule a `{ name | key | Name | Key: <string>, … }` object's label names, if any. A label with spaces
  // names a thing ("Secret Garden"), not a field, header or parameter.
  function pairRule(source: Record<string, unknown>): RedactionRule | 'default' | null {
    for (const field of LABEL_FIELDS) {
      const label = source[field];
      if (typeof label === 'string') return SPACED.test(label) ? null : secretKey(label);
    }
    return null;
  }

  function redactEntry(key: string, item: unknown, depth: number): unknown {
    const rule = secretKey(key);
    if (rule === null) return walk(item, depth + 1);
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
    redact: <T>(value: T) => walk(value, 0) as T,
    redactExcept: <T extends object>(value: T, keep: ReadonlySet<string>) => walk(value, 0, keep) as T,
    redactField: (key: string, value: unknown) => redactEntry(key, value, 0),
  };
}

// The fields that carry the value of a labelled pair: HTTP headers and tags (`{ name, value }`, `{ Key, Value }`),
// and checks (`{ name, expected, observed }`).
const PAIRED_FIELDS: ReadonlySet<string> = new Set(['value', 'Value', 'expected', 'observed']);
const LABEL_FIELDS = ['name', 'key', 'Name', 'Key'];
const SPACED = /\s/;

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

// Plain assignment of "__proto__" would set the prototype and drop the key.
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

function replaceDefault(match: string, ...rest: unknown[]): string {
  const groups = rest[rest.length - 1] as Record<string, string | undefined>;
  if (groups.card_number !== undefined) {
    const offset = rest[rest.length - 3] as number;
    const text = rest[rest.length - 2] as string;
    return redactCards(match, text[offset + match.length] ?? ' ');
  }
  if (groups.url_credentials !== undefined) return '://[redacted:url_credentials]@';
  if (groups.assignment !== undefined) {
    // The keyword, the sign and the value's quotes stay (JSON text stays JSON): only the value goes.
    const sign = match.search(/[=:]/);
    const start = sign + /^[=:]\s*(?:\\?["'])?/.exec(match.slice(sign))![0].length;
    const close = start < match.length ? (/\\?["']$/.exec(match.slice(start))?.[0] ?? '') : '';
    return `${match.slice(0, start)}[redacted:assignment]${close}`;
  }
  for (const [name, text] of Object.entries(groups)) if (text !== undefined) return `[redacted:${name}]`;
  return '[redacted]';
}

/**
 * Redacts every card number in a candidate run of digit groups. The greedy run may be longer than the
 * card ("4111 1111 1111 1111 22"), so when the whole run fails, each stretch that starts and ends at a
 * group boundary is tried, longest first. A run glued to a following word character (a hash, an id)
 * is not a card.
 */
function redactCards(run: string, after: string): string {
  const boundaryAfter = (end: number) => (end === run.length ? !/[\w-]/.test(after) : /[ -]/.test(run[end]!));
  for (let start = 0; start < run.length; start++) {
    if (!/\d/.test(run[start]!) || (start > 0 && !/[ -]/.test(run[start - 1]!))) continue;
    for (let end = run.length; end - start >= 13; end--) {
      if (!boundaryAfter(end) || !/\d/.test(run[end - 1]!) || !luhn(run.slice(start, end))) continue;
      return `${run.slice(0, start)}[redacted:card_number]${redactCards(run.slice(end), after)}`;
    }
  }
  return run;
}

// A 13-19 digit integer that passes the Luhn check (epoch milliseconds have 13 digits: too many false hits).
function looksLikeCardNumber(value: number): boolean {
  if (!Number.isSafeInteger(value) || value < 1e13) return false;
  return luhn(String(value));
}

function luhn(text: string): boolean {
  const digits = text.replace(/[ -]/g, '');
  if (digits.length < 13 || digits.length > 19) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
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
