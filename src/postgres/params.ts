// The parameters the Postgres store binds: times as whole milliseconds, event columns in statement order, and
// JSON that jsonb refuses turned into an error naming the field.
import { ReadbackError } from '../errors.js';
import { type NewEvent, RECORD_SCHEMA_VERSION, type ReserveStart } from '../store/types.js';

// Times are bigint milliseconds here, and Postgres refuses a fraction ("invalid input syntax for type bigint")
// where memory and SQLite keep it: a clock with sub-millisecond resolution, or a fractional contract duration,
// would fail every write. So a written time is the nearest whole millisecond.
export function wholeMs(ms: number): number {
  return Number.isInteger(ms) ? ms : Math.round(ms);
}

// Where the reserve statement binds its JSON texts (recordParams order, then the event's columns).
export const SCOPE_PARAM = 4;
export const INPUT_PARAM = 9;
export const DETAIL_PARAM = 33;
export const WRITE_ID_PARAM = 34;
const START_DETAIL_PARAM = 40;

/** Appends the start event's parameters ($36..$41), or nulls for a reserve that starts nothing. */
export function pushStartValues(params: unknown[], event: NewEvent | undefined): void {
  if (event === undefined) {
    params.push(null, null, null, null, null, null);
    return;
  }
  const detail = event.detail === undefined ? null : (JSON.stringify(event.detail) ?? null);
  params.push(
    wholeMs(event.at),
    event.type,
    event.status ?? null,
    event.actor ?? null,
    event.attempt,
    detail,
  );
}

/** The start event's JSON text, named for an error, when the reserve has one. */
export function startJson(start: ReserveStart | undefined, values: unknown[]): [string, unknown][] {
  return start === undefined ? [] : [['start.event.detail', values[START_DETAIL_PARAM]]];
}

// A JSON string escape jsonb refuses: \u0000, or a surrogate JSON.stringify escaped because it is unpaired.
// The escape counts only when the backslashes before it are an even number (not themselves escaped).
const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/**
 * Turns Postgres refusing a JSON value (22P05 for \u0000, 22P02 for an unpaired surrogate) into an error
 * naming the field: valid JavaScript that jsonb cannot hold. The statement failed whole, so nothing was
 * written. Looked for only after the statement failed, so a write that succeeds pays nothing for it.
 */
export function refuseUnstorableJson(error: unknown, texts: [field: string, text: unknown][]): void {
  const code = (error as { code?: unknown } | null)?.code;
  if (code !== '22P05' && code !== '22P02') return;
  const found = texts.find(([, text]) => typeof text === 'string' && UNSTORABLE_ESCAPE.test(text));
  if (found === undefined) return;
  throw new ReadbackError(
    'unstorable_value',
    `holds a NUL character (\\u0000) or an unpaired UTF-16 surrogate, which PostgreSQL jsonb cannot store (${(error as Error).message})`,
    found[0],
  );
}

/** Appends an event's columns to a statement's parameters, in the order the statements bind them. */
export function pushEventValues(params: unknown[], event: NewEvent): unknown[] {
  params.push(
    RECORD_SCHEMA_VERSION,
    wholeMs(event.at),
    event.type,
    event.status ?? null,
    event.actor ?? null,
    event.attempt,
    // SQL NULL for "absent", so a given `null` (JSON 'null') still reads back as given.
    event.detail === undefined ? null : (JSON.stringify(event.detail) ?? null),
  );
  return params;
}
