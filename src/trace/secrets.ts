// The built-in secret patterns: the keys whose values are secrets, and the one scan that finds secret-shaped
// text (credentials, tokens, keys, card numbers) with the cheap prefilter that lets most strings skip it.

/**
 * Keys whose values are secrets whatever they look like. `pass` alone is not here: checks carry `pass`. Words
 * may be apart by a space or dot as well (`Pass Word`, `API Key`, `api.key`: form labels and config paths).
 */
export const SECRET_KEY =
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
// 13 digits, each pair apart by at most three CARD_GAP characters or dots, starting where a token starts: the card
// branch (both forms) with its lookbehind, so the digits inside an id (`…-4348-4165-9fd5`) do not send it to the
// full scan. Written out rather than as `(?:…\d){12}`, and with the dot in the class rather than as a second
// alternative: either way V8 scans about 6x slower in prose with dates and ids.
const CARD_DIGITS = new RegExp(`(?<![\\w.-])\\d${`${CARD_GAP.replace('-]', '.-]')}{0,3}\\d`.repeat(12)}`);
// The assignment keywords by the code of their last character (all ASCII): a keyword must end right before the
// spaces before '=' or ':'.
const KEYS_BY_LAST: (string[] | undefined)[] = [];
for (const key of new Set(ASSIGNMENT_KEYS)) {
  const last = key.charCodeAt(key.length - 1);
  KEYS_BY_LAST[last] = [...(KEYS_BY_LAST[last] ?? []), key];
}
const SPACE = /\s/;
// Every branch that SECRET_OPENING stands for matches 14 characters or more (`Basic` and eight characters of
// credentials is the shortest) but the URL credentials (`://:p@`): a shorter text (a target, an id) needs only
// `://` looked for, besides the card digits and the assignments.
const SHORTEST_OPENED = 14;

/**
 * Whether the built-in scan could find anything in `text`: false proves that SECRET_VALUE has no match there, so
 * the scan is skipped. Internal (exported for the tests that hold it to the full scan).
 */
export function mayHoldSecret(text: string): boolean {
  return (
    (text.length < SHORTEST_OPENED ? text.includes('://') : SECRET_OPENING.test(text)) ||
    (text.length >= 13 && CARD_DIGITS.test(text)) ||
    assignmentBefore(text, text.indexOf(':')) ||
    assignmentBefore(text, text.indexOf('='))
  );
}

// Whether an assignment keyword, then an optional closing quote (itself optionally escaped), then only whitespace,
// comes right before the sign at `at` or a later one like it. Every keyword ends in a letter, so it ends exactly
// where that quote or whitespace starts.
function assignmentBefore(text: string, at: number): boolean {
  if (at === -1) return false;
  const sign = text[at] as string;
  for (; at !== -1; at = text.indexOf(sign, at + 1)) {
    let end = at;
    while (end > 0 && isSpace(text.charCodeAt(end - 1))) end--;
    const quote = text.charCodeAt(end - 1);
    if (quote === 34 || quote === 39) {
      end--;
      if (text.charCodeAt(end - 1) === 92) end--;
    }
    const keys = KEYS_BY_LAST[lowerAscii(text.charCodeAt(end - 1))];
    if (keys === undefined) continue;
    for (let k = 0; k < keys.length; k++) if (endsWithWord(text, end, keys[k] as string)) return true;
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

/** A 13-19 digit integer that passes the Luhn check (epoch milliseconds have 13 digits: too many false hits). */
export function looksLikeCardNumber(value: number): boolean {
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
