/**
 * The adapter seam: every file format `readback review` reads is one `TraceAdapter` that recognizes
 * its input and turns it into an `Incident`. Adding a format (readback's own trace, a vendor's log)
 * means adding one entry to `TRACE_ADAPTERS`; the analysis never changes.
 */
import { incidentFromFixture, readFixture } from './fixture.js';
import type { ReadOutcome } from './issues.js';
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

function sampleOf(text: string): InputSample {
  const sample: InputSample = {};
  try {
    sample.document = JSON.parse(text);
  } catch {
    // Not one JSON document: a JSONL trace, or garbage that the first line will show.
  }
  const first = text.split(/\r?\n/).find((l) => l.trim() !== '');
  if (first !== undefined) {
    try {
      sample.firstRecord = JSON.parse(first);
    } catch {
      // Left undefined: no adapter will claim the input, and the error says what was expected.
    }
  }
  return sample;
}

/** Reads an input with the first adapter that recognizes it; unrecognized input is an issue, not a throw. */
export function readIncident(
  text: string,
  source: string,
  adapters: readonly TraceAdapter[] = TRACE_ADAPTERS,
): ReadOutcome<Incident> {
  const sample = sampleOf(text);
  const adapter = adapters.find((a) => a.detects(sample));
  if (adapter !== undefined) return adapter.read(text, source);
  if (typeof field(sample.firstRecord, 'type') === 'string') {
    return {
      ok: false,
      issues: [
        {
          line: 1,
          field: 'callId',
          message: 'records with "type" must be readback trace events, which carry a "callId"',
        },
      ],
    };
  }
  return {
    ok: false,
    issues: [
      {
        line: 1,
        field: 'kind',
        message:
          'not a review trace: expected JSONL records with "kind" (see docs/review-trace-format.md) or a fixture written by --fixture-out',
      },
    ],
  };
}
