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

// Keys whose values are secrets whatever they look like. `pass` alone is not here: checks carry `pass`. Words
// may be apart by a space or dot as well (`Pass Word`, `API Key`, `api.key`: form labels and config paths).
const SECRET_KEY =
  /pass[-_ .]?w(?:or)?d|passphrase|passcode|^pwd$|secret|token|api[-_ .]?key|access[-_ .]?key|private[-_ .]?key|authori[sz]ation|^auth$|cookie|session[-_ .]?(?:id|key)|credential|card[-_ .]?(?:number|num|no)$|^(?:pan|cvv2?|cvc|ssn)$|signature/i;

// The keywords of `name=value` assignments, lower case and matched in any case (`X-API-Key:`, `Api_Key=`,
// `PASSWORD=`, `SessionID=`): config lines, query strings (`X-Amz-Signature=`, `sig=`), headers (`Cookie:`) and
// JSON text. Each ends in a letter (see `assignmentBefore`).
const ASSIGNMENT_KEYS = [
  ...['passwd', 'password', 'pwd', 'passphrase', 'secret', 'token', 'signature', 'sig', 'cookie'],
  ...['secret', 'private', 'api', 'access'].flatMap((word) => [`${word}_key`, `${word}-key`, `${word}key`]),
  // `session_id=…` in query strings and logs, `;jsessionid=…` in Java URLs.
  ...['session_id', 'session-id', 'sessionid'],
];

// What may stand between two digit groups of a card number: spaces (also no-break and the narrow and figure
// spaces of formatted numbers), tabs and dashes.
const CARD_GAP = '[ \\t\\u00a0\\u2007\\u202f-]';

// The comma-separated `name=value` list of a Digest or AWS SigV4 header: one parameter (`response=`,
// `Signature=`) is the secret, so the whole list goes.
const AUTH_PARAM = '[\\w-]+=(?:"[^"]*"|[^\\s,"]*)';
const AUTH_PARAMS = `${AUTH_PARAM}(?:\\s*,\\s*${AUTH_PARAM})*`;

// Schemes whose credential goes whatever it looks like (`Basic dXNlcjpwYXNz` has no digit).
const AUTH_SCHEME = '(?:[Bb]earer|BEARER|[Bb]asic|BASIC|[Tt]oken|TOKEN)';

// One alternation, scanned once per string; each group names the kind of secret it found. No `i` flag and no
// leading lookbehinds: every branch starts with a literal or a digit, which keeps the scan about 30% cheaper.
// A new branch needs its own clause in `mayHoldSecret`, which decides which strings this scan can skip.
const SECRET_VALUE = new RegExp(
  [
    // A block cut short (a truncated message) has no END line: everything after its BEGIN line goes.
    // Labels are short ("ENCRYPTED PRIVATE KEY", "PGP PRIVATE KEY BLOCK"): unbounded ones made a text with many
    // "PRIVATE KEY" after one BEGIN quadratic to scan.
    '(?<private_key>-----BEGIN [A-Z ]{0,40}PRIVATE KEY[A-Z ]{0,40}-----(?:[\\s\\S]*?-----END [A-Z ]{0,40}PRIVATE KEY[A-Z ]{0,40}-----|[\\s\\S]*))',
    // A header value after its name goes whatever its scheme (`Token …`, `Bearer: …`, none); `replaceDefault`
    // names it by its scheme. A credential has 8+ characters; after an unknown word or none, also a digit or
    // symbol, or 20+ characters, so prose ("Authorization: invalid credentials") is left alone.
    `(?<authorization>(?:[Aa]uthorization|AUTHORIZATION)(?:\\\\?["'])?\\s*[=:]\\s*(?:\\\\?["'])?(?:[A-Za-z][\\w-]*\\s+${AUTH_PARAMS}|${AUTH_SCHEME}:?\\s+[^\\s,;"'\\\\]{8,}|(?:[A-Za-z][\\w-]*:?\\s+)?(?:(?=[^\\s,;"'\\\\]*[\\d+/=._~-])[^\\s,;"'\\\\]{8,}|[^\\s,;"'\\\\]{20,})))`,
    '(?<bearer>(?:[Bb]earer|BEARER)(?::\\s*|\\s+)[A-Za-z0-9\\-._~+/]{8,}=*)',
    // Basic credentials are base64, so a digit, '+', '/' or '=' tells them from the word "basic" in prose.
    '(?<basic_auth>(?:[Bb]asic|BASIC)\\s+(?=[A-Za-z0-9+/]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2})',
    // Only where a token starts (the lookbehind runs only after `eyJ`): in a long base64 run, every `eyJ` inside
    // would start a scan to the run's end, quadratic in its length.
    '(?<jwt>eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{5,}\\.[A-Za-z0-9_-]{5,}\\.[A-Za-z0-9_-]*)',
    '(?<api_key>(?:sk|rk|pk|SK|RK|PK)[-_](?:live[-_]|test[-_]|proj[-_]|ant[-_])?[A-Za-z0-9_-]{16,})',
    // A bare secret access key (40 base64 characters) cannot be told from other ids, except right after its key
    // id (`AKIA…,wJalr…`: the credentials CSV, `aws configure` output); elsewhere only its label finds it.
    '(?<aws_key>A[KS]IA[0-9A-Z]{16}(?:[\\s,;:|"\'=]{1,8}[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=]))?)',
    '(?<github_token>gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})',
    '(?<slack_token>xox[abposr]-[A-Za-z0-9-]{10,})',
    '(?<google_key>AIza[0-9A-Za-z_-]{35})',
    // The user name may be empty (`redis://:password@host`), the password may hold an unescaped `@` (the host
    // starts after the last one), and a long user name alone is a token (`https://<token>@github.com/…`).
    '(?<url_credentials>://(?:[^\\s:/@?#]*:[^\\s/?#]+|[^\\s:/@?#]{16,})@)',
    // The keyword may be a quoted JSON key (`"password": "…"`, or `\\"password\\"` in JSON inside JSON), and a
    // quoted value goes whole, spaces and all, up to its closing quote (or the end of a cut-short text).
    `(?<assignment>(?:${ASSIGNMENT_KEYS.map(anyCase).join('|')})(?:\\\\?["'])?\\s*[=:]\\s*(?:\\\\?"(?:[^"\\\\]|\\\\[^"])*(?:\\\\?")?|'[^']*'?|[^\\s,;&"']+))`,
    // Starts only where a token starts: a digit inside a word ("a1 4111…") would otherwise begin a
    // candidate that is refused as a whole, and the scan would resume after the real card.
    // Groups may be apart by up to 3 spaces, dashes, tabs or no-break spaces ("4111  1111", "4111 - 1111"), or
    // written as four dotted groups of four.
    `(?<card_number>(?<![\\w.-])(?:\\d{4}(?:\\.\\d{4}){3}|\\d(?:${CARD_GAP}{0,3}\\d){12,18}))`,
  ].join('|'),
  'g',
);

// The word in any case, without a slower `i` flag on the whole scan: `[pP][aA]…`.
function anyCase(word: string): string {
  return word.replace(/[a-z]/g, (c) => `[${c}${c.toUpperCase()}]`);
}

// The prefilter (`mayHoldSecret`) checks what every match of some SECRET_VALUE branch must contain. The full scan
// costs ~4 ns a character (12 branches with no common prefix); these checks cost about half as much, and a typical
// completion message fails all of them, so it skips the scan. First, the opening literal of each branch but the
// last two (or a part of it: `[kK][-_]` for the API keys).
const SECRET_OPENING =
  /-----BEGIN |[Aa]uthorization|AUTHORIZATION|[Bb]earer|BEARER|[Bb]asic|BASIC|eyJ|[kK][-_]|A[KS]IA|gh[pousr]_|github_pat_|xox[abposr]-|AIza|:\/\//;
// 13 digits, each pair apart by at most three CARD_GAP characters or dots: the card branch (both forms) without its
// lookbehind. Written out rather than as `(?:…\d){12}`, and with the dot in the class rather than as a second
// alternative: either way V8 scans about 6x slower in prose with dates and ids.
const CARD_DIGITS = new RegExp(`\\d${`${CARD_GAP.replace('-]', '.-]')}{0,3}\\d`.repeat(12)}`);
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
    const keys = KEYS_BY_LAST.get(lowerAscii(text.charCodeAt(end - 1)));
    if (keys?.some((key) => endsWithWord(text, end, key))) return true;
  }
  return false;
}

// Whether text[…, end) ends with the lower-case `word`, in any case (ASCII letters, as `anyCase` matches).
function endsWithWord(text: string, end: number, word: string): boolean {
  const start = end - word.length;
  if (start < 0) return false;
  for (let i = 0; i < word.length; i++) {
    if (lowerAscii(text.charCodeAt(start + i)) !== word.charCodeAt(i)) return false;
  }
  return true;
}

function lowerAscii(code: number): number {
  return code >= 65 && code <= 90 ? code + 32 : code;
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
    const verdict = { rule, text: redactString(key) };
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
      // `[['Authorization', '…'], …]` (Object.entries, a Headers object spread, a Map's entries) is a list of
      // fields: each pair's value is redacted by its name, as in an object.
      const entries = Array.isArray(value[0]) && value.every(isEntry);
      let copy: unknown[] | undefined;
      for (let i = 0; i < value.length; i++) {
        const item = entries ? redactPair(value[i], depth + 1) : walk(value[i], depth + 1);
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
      if (keep?.has(key)) continue;
      const item = source[key];
      const { rule, text } = keyVerdict(key);
      if (pair === undefined && PAIRED_FIELDS.has(key)) pair = pairRule(source);
      const redacted =
        pair && PAIRED_FIELDS.has(key)
          ? redactWith(pair, item)
          : rule
            ? redactWith(rule, item)
            : walk(item, depth + 1);
      if (redacted === item && text === key) continue;
      out ??= copyOf(source, keys);
      if (text !== key) Reflect.deleteProperty(out, key);
      setOwn(out, text === key ? key : freeKey(out, text), redacted);
    }
    // Symbol keys: JSON drops them, but a callback sink gets the object itself. Key rules see the description.
    const symbols = Object.getOwnPropertySymbols(source);
    if (symbols.length > 0) {
      const bySymbol = source as Record<symbol, unknown>;
      const items = symbols.map((symbol) => bySymbol[symbol]);
      const redacted = symbols.map((symbol, i) => redactEntry(symbol.description ?? '', items[i], depth));
      if (!out && redacted.some((item, i) => item !== items[i])) out = copyOf(source, keys);
      // A copy keeps every symbol-keyed value, redacted.
      if (out)
        for (let i = 0; i < symbols.length; i++) (out as Record<symbol, unknown>)[symbols[i]!] = redacted[i];
    }
    return out ?? value;
  }

  // One `[name, value]` pair of a list of fields, its name redacted as a key: copied only when either changes.
  function redactPair(pair: unknown, depth: number): unknown {
    const [name, item] = pair as [string, unknown];
    const { rule, text } = keyVerdict(name);
    const redacted = rule && !SPACED.test(name) ? redactWith(rule, item) : walk(item, depth + 1);
    return redacted === item && text === name ? pair : [text, redacted];
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

// What a key rule decided for a key, and the key as text scanned for secrets.
interface KeyVerdict {
  rule: RedactionRule | 'default' | null;
  text: string;
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

function replaceDefault(match: string, ...rest: unknown[]): string {
  const groups = rest[rest.length - 1] as Record<string, string | undefined>;
  if (groups.card_number !== undefined) {
    const offset = rest[rest.length - 3] as number;
    const text = rest[rest.length - 2] as string;
    return redactCards(match, text[offset + match.length] ?? ' ');
  }
  if (groups.url_credentials !== undefined) return '://[redacted:url_credentials]@';
  if (groups.authorization !== undefined) {
    // The header name, the sign and an opening quote stay; the scheme, if any, names the marker.
    const start = /^[^=:]*[=:]\s*(?:\\?["'])?/.exec(match)![0].length;
    const scheme = /^([A-Za-z][\w-]*):?\s+/.exec(match.slice(start))?.[1]?.toLowerCase();
    const name = scheme === 'bearer' ? 'bearer' : scheme === 'basic' ? 'basic_auth' : 'authorization';
    return `${match.slice(0, start)}[redacted:${name}]`;
  }
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
  // Only stretches of whole groups with 13 to 19 digits are tried, not every pair of character positions: a
  // long text of digits apart by spaces is made of many such runs. digits[k]: the digits before group k.
  const starts: number[] = [];
  const ends: number[] = [];
  const digits = [0];
  for (let at = 0; at < run.length; at++) {
    if (!isDigit(run.charCodeAt(at))) continue;
    if (at === 0 || !isDigit(run.charCodeAt(at - 1))) starts.push(at);
    if (at + 1 === run.length || !isDigit(run.charCodeAt(at + 1))) {
      ends.push(at + 1);
      digits.push(digits.at(-1)! + at + 1 - starts.at(-1)!);
    }
  }
  const gluedAfter = /[\w-]/.test(after);
  for (let i = 0; i < starts.length; i++) {
    for (let j = ends.length - 1; j >= i && digits[j + 1]! - digits[i]! >= 13; j--) {
      const start = starts[i]!;
      const end = ends[j]!;
      if (digits[j + 1]! - digits[i]! > 19 || (end === run.length && gluedAfter)) continue;
      if (!luhn(run, start, end)) continue;
      return `${run.slice(0, start)}[redacted:card_number]${redactCards(run.slice(end), after)}`;
    }
  }
  return run;
}

// An ASCII digit's char code (`\d`, without a regex call per character).
function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

// A 13-19 digit integer that passes the Luhn check (epoch milliseconds have 13 digits: too many false hits).
function looksLikeCardNumber(value: number): boolean {
  if (!Number.isSafeInteger(value) || value < 1e13) return false;
  const digits = String(value);
  return luhn(digits, 0, digits.length);
}

// Whether the digits of text[start, end) (13 to 19 of them) pass the Luhn check; other characters are skipped.
function luhn(text: string, start: number, end: number): boolean {
  let sum = 0;
  let count = 0;
  for (let at = end - 1; at >= start; at--) {
    const code = text.charCodeAt(at);
    if (!isDigit(code)) continue;
    let d = code - 48;
    if (count++ % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return count >= 13 && count <= 19 && sum % 10 === 0;
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
