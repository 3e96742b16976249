import { readFileSync } from 'node:fs';
import { UsageError } from './args.js';

/**
 * A command that could not do what was asked for a reason the user can act on (an unknown id, an already
 * settled operation): reported in one line without a stack, exit code 1.
 */
export class CommandError extends Error {
  override readonly name = 'CommandError';
}

/** A timestamp for a table cell: ISO 8601 to the second, or `-` when absent. */
export function shortTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A full ISO 8601 timestamp, or `-` when absent. */
export function isoTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '-';
  return new Date(ms).toISOString();
}

/** One-line JSON-ish rendering of a value for human output, cut at `max` characters. */
export function compactValue(value: unknown, max = 100): string {
  let text: string;
  try {
    text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

/** A string flag's value, or undefined when the flag was not given. */
export function stringFlag(
  flags: Record<string, string | boolean | undefined>,
  name: string,
): string | undefined {
  const value = flags[name];
  return typeof value === 'string' ? value : undefined;
}

/** Parses a whole number ≥ `min` given as `--name N`; anything else is a usage error naming the option. */
export function intFlag(
  flags: Record<string, string | boolean | undefined>,
  name: string,
  min = 1,
): number | undefined {
  const raw = stringFlag(flags, name);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
    throw new UsageError(`option '--${name}' needs a whole number ≥ ${min}; got '${raw}'`);
  }
  return Number(raw);
}

/** The table width: the terminal's, or 120 columns off a terminal (logs, pipes). */
export function outputWidth(stdout: { isTTY?: boolean; columns?: number }): number {
  return stdout.isTTY === true && stdout.columns ? Math.max(60, stdout.columns) : 120;
}

// Control characters (C0, DEL, C1), the Unicode line separators, and the bidirectional marks, overrides and
// isolates, which make a terminal show stored text in an order other than its own ("Trojan Source").
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
const NAMED_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * Free text as one printable line: a note, a tool's error or a model-chosen target can hold line breaks that
 * would forge lines of the output ("status verified") and escape sequences a terminal would obey.
 */
export function printable(text: string): string {
  return text.replace(
    UNPRINTABLE,
    (c) => NAMED_ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** `printable` applied to every string in a value (arrays and plain objects), for rendering untrusted data. */
export function printableDeep<T>(value: T): T {
  if (typeof value === 'string') return printable(value) as T;
  if (Array.isArray(value)) return value.map(printableDeep) as T;
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, printableDeep(v)])) as T;
}

// JSON.stringify leaves C1 controls, DEL, the line separators and the bidi controls as they are, and a terminal
// showing the document may obey them; inside a JSON string a \u escape is the same character.
const UNPRINTABLE_IN_JSON = /[\u007f-\u009f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/** JSON text with the characters `printable` escapes written as `\uXXXX`: the same document, safe on a terminal. */
export function printableJson(json: string): string {
  return json.replace(UNPRINTABLE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });
const LENIENT = new TextDecoder('utf-8');

/**
 * Reads a file the user named as UTF-8 text: a missing file is a usage error, and a UTF-16 file or bytes that
 * are not UTF-8 are errors naming the line, since decoding them to U+FFFD would quote changed evidence.
 */
export function readUtf8(path: string, what: string, options: { tornTail?: boolean } = {}): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    // A path that names nothing is a mistyped command line, as for a missing store, contract or module.
    const code = (error as { code?: unknown }).code;
    if (code === 'ENOENT') throw new UsageError(`${what} not found: ${path}`);
    if (code === 'EISDIR') throw new UsageError(`${what} ${path} is a directory, not a file`);
    throw new CommandError(`could not read ${what} ${path}: ${(error as Error).message}`);
  }
  // Windows PowerShell 5 writes `>` redirects as UTF-16 with a byte order mark.
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    throw new CommandError(
      `${what} ${path} is UTF-16 text; readback reads UTF-8 (convert it, e.g. iconv -f UTF-16 -t UTF-8)`,
    );
  }
  try {
    return UTF8.decode(bytes);
  } catch (error) {
    if (!(error instanceof TypeError)) {
      throw new CommandError(`could not read ${what} ${path}: ${(error as Error).message}`);
    }
  }
  const bad = firstBadLine(bytes);
  // A trace writer that crashed can cut the last line inside a character; that line is torn anyway (the
  // trace reader skips an unterminated last line that is not JSON), so `tornTail` decodes it leniently.
  if (options.tornTail === true && bad.start > 0 && bad.end === bytes.length) {
    return UTF8.decode(bytes.subarray(0, bad.start)) + LENIENT.decode(bytes.subarray(bad.start));
  }
  throw new CommandError(`${what} ${path} is not UTF-8 text: line ${bad.line} has invalid bytes`);
}

// Only on the error path: decode line by line to find the first line that is not UTF-8 (`end` is the
// file's length when that line has no newline after it).
function firstBadLine(bytes: Buffer): { line: number; start: number; end: number } {
  let start = 0;
  for (let line = 1; ; line++) {
    const newline = bytes.indexOf(0x0a, start);
    const end = newline === -1 ? bytes.length : newline;
    try {
      UTF8.decode(bytes.subarray(start, end));
    } catch {
      return { line, start, end };
    }
    if (newline === -1) return { line, start, end };
    start = newline + 1;
  }
}
