/**
 * The adapter seam: every file format `readback review` reads is one `TraceAdapter` that recognizes
 * its input and turns it into an `Incident`. Adding a format (readback's own trace, a vendor's log)
 * means adding one entry to `TRACE_ADAPTERS`; the analysis never changes.
 */
import { incidentFromFixture, readFixture } from './fixture.js';
import type { InputIssue, ReadOutcome } from './issues.js';
import type { Incident } from './model.js';
import { parsePlainTrace } from './plain.js';
import { parseReadbackTrace } from './readback-trace.js';

/** What an adapter is shown to decide whether an input is its format. */
export interface InputSample {
  /** The whole input parsed as one JSON value, when it is one (a fixture, a JSON document). */
  document?: unknown;
  /** The first non-blank line parsed as JSON, when it parses (a JSONL trace). */
  firstRecord?: unknown;
}

/** One input format: how to recognize it and how to read it into an incident. */
export interface TraceAdapter {
  format: string;
  detects(sample: InputSample): boolean;
  read(text: string, source: string): ReadOutcome<Incident>;
}

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;
}

/** The plain JSONL format of docs/review-trace-format.md: records carry `kind`. */
export const plainAdapter: TraceAdapter = {
  format: 'plain',
  detects: (sample) => typeof field(sample.firstRecord, 'kind') === 'string',
  read: parsePlainTrace,
};

/** A regression fixture written by `--fixture-out`: one JSON object with `readbackReviewFixture`. */
export const fixtureAdapter: TraceAdapter = {
  format: 'fixture',
  detects: (sample) => field(sample.document, 'readbackReviewFixture') !== undefined,
  read(text, source) {
    const read = readFixture(JSON.parse(text));
    return read.ok ? { ok: true, value: incidentFromFixture(read.value, source) } : read;
  },
};

/** readback's own run trace (src/trace): events carry `type` and `callId`. */
export const readbackTraceAdapter: TraceAdapter = {
  format: 'trace',
  detects: (sample) =>
    typeof field(sample.firstRecord, 'type') === 'string' &&
    typeof field(sample.firstRecord, 'callId') === 'string',
  read: parseReadbackTrace,
};

/** The formats `readback review` reads, tried in order. */
export const TRACE_ADAPTERS: TraceAdapter[] = [fixtureAdapter, plainAdapter, readbackTraceAdapter];

/** Where the sample came from, for the issue when no adapter claims the input. */
interface SampleOrigin {
  /** 1-based line of the first non-blank line; undefined when the input is blank. */
  firstLine?: number;
  /** 1-based line of `firstRecord`. */
  recordLine?: number;
  /** Why the first non-blank line is not JSON, when it is not. */
  firstError?: string;
}

function sampleOf(text: string): InputSample & SampleOrigin {
  const sample: InputSample & SampleOrigin = {};
  try {
    sample.document = JSON.parse(text);
  } catch {
    // Not one JSON document: a JSONL trace, or garbage that the first line will show.
  }
  // The first line that parses decides the format, so one broken line at the top is reported by the
  // format's own reader, with every other problem, instead of hiding what the file is.
  const lines = text.split(/\r?\n/);
  for (const [index, line] of lines.entries()) {
    if (line.trim() === '') continue;
    sample.firstLine ??= index + 1;
    try {
      sample.firstRecord = JSON.parse(line);
      sample.recordLine = index + 1;
      break;
    } catch (error) {
      sample.firstError ??= (error as Error).message;
    }
  }
  return sample;
}

// A fixture is one JSON document over many lines: cut short or mis-edited, its first line is not a JSONL record
// either, and "line 1" would point away from the fault. Name the line where the document's parse stopped.
function brokenFixture(text: string): InputIssue | undefined {
  if (!/^\s*\{/.test(text) || !text.includes('"readbackReviewFixture"')) return undefined;
  try {
    JSON.parse(text);
    return undefined;
  } catch (error) {
    const message = (error as Error).message;
    const position = /at position (\d+)/.exec(message);
    const end = position !== null ? Number(position[1]) : text.trimEnd().length;
    const line = text.slice(0, end).split('\n').length;
    return { line, message: `is not valid JSON (${message}): a fixture cut short or edited by hand` };
  }
}

/** Reads an input with the first adapter that recognizes it; unrecognized input is an issue, not a throw. */
export function readIncident(
  text: string,
  source: string,
  adapters: readonly TraceAdapter[] = TRACE_ADAPTERS,
): ReadOutcome<Incident> {
  // Some editors start a UTF-8 file with a byte-order mark, which JSON.parse refuses; it is not content.
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const sample = sampleOf(body);
  const adapter = adapters.find((a) => a.detects(sample));
  if (adapter !== undefined) return adapter.read(body, source);
  const expected =
    'expected JSONL records with "kind" (see docs/review-trace-format.md) or a fixture written by --fixture-out';
  if (sample.firstLine === undefined) {
    return { ok: false, issues: [{ message: `the input is empty; ${expected}` }] };
  }
  if (sample.document === undefined && sample.firstRecord === undefined) {
    const broken = brokenFixture(body);
    if (broken !== undefined) return { ok: false, issues: [broken] };
    return {
      ok: false,
      issues: [{ line: sample.firstLine, message: `is not valid JSON (${sample.firstError}); ${expected}` }],
    };
  }
  const line = sample.document === undefined ? sample.recordLine! : sample.firstLine;
  if (typeof field(sample.firstRecord, 'type') === 'string') {
    return {
      ok: false,
      issues: [
        {
          line,
          field: 'callId',
          message: 'records with "type" must be readback trace events, which carry a "callId"',
        },
      ],
    };
  }
  return { ok: false, issues: [{ line, field: 'kind', message: `not a review trace: ${expected}` }] };
}
