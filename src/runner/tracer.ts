import { type Clock, isoTime } from '../clock.js';
import type { Completion, Mode } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import type { OperationRecord } from '../store/types.js';
import type { TraceEntry, TraceEvent, TraceSink } from '../trace/events.js';
import { createRedactor, type PlainRedactor, type RedactionOptions } from '../trace/redact.js';
import { checkTraceOptions } from './options.js';
import { describeError } from './readback.js';
import type { ShadowState } from './shadow.js';
import { RunTrace } from './trace.js';

/** The run record settings of `createRunner({ trace })`. */
export interface TraceOptions {
  /** Where events go; with none, nothing is built at all. */
  sinks: TraceSink[];
  /** Redaction applied to every event before any sink sees it; built-in rules are on by default. */
  redaction?: RedactionOptions;
  /** Put the (redacted) validated arguments in `tool.selected`; by default only their hash is recorded. */
  recordArguments?: boolean;
  /** Put the (redacted) raw execute result in `execute.finished` (default true); its hash is always kept. */
  recordResults?: boolean;
  /** Says whether a raw result that returned normally claims success; the default reads `ok`/`success`/`error`/`status`. */
  claimOf?: (raw: unknown) => 'success' | 'failure';
  /** Called when a sink throws or rejects; the run itself is never affected. Defaults to one warning per sink. */
  onSinkError?: (error: unknown, event: TraceEvent) => void;
}

/** Per-call facts recorded in `run.started`. */
export interface CallFacts {
  runId: string;
  entry: TraceEntry;
  turn?: number;
  tenant?: string;
  actor?: string;
  environment?: string;
  scope?: Record<string, string>;
  toolsExposed?: string[];
  toolCallId?: string;
}

/** Builds and dispatches trace events for one runner; `begin` opens one call's record. */
export class Tracer {
  readonly redactor: PlainRedactor;
  private readonly warned = new Set<TraceSink>();
  private callSeq = 0;
  private readonly callPrefix = `call_${Math.random().toString(36).slice(2, 10)}_`;

  /** The event types some sink uses, or null when one of them takes every type. */
  readonly wanted: ReadonlySet<string> | null;

  constructor(
    readonly options: TraceOptions,
    readonly clock: Clock,
  ) {
    this.redactor = createRedactor(options.redaction);
    const lists = options.sinks.map((sink) => sink.types);
    this.wanted = unionOf(lists);
    this.narrowsPerCall = options.sinks.some((sink) => typeof sink.typesAfterStart === 'function');
  }

  /**
   * After a call's `run.started` went out: each sink's event types for the rest of the call (one entry per sink,
   * undefined for all) and their union (null for all), or undefined when no sink narrows them for this call.
   */
  typesAfterStart(
    started: TraceEvent,
  ): { perSink: (ReadonlySet<string> | undefined)[]; wanted: ReadonlySet<string> | null } | undefined {
    if (!this.narrowsPerCall) return undefined;
    const perSink = this.options.sinks.map((sink) => {
      if (sink.types && !sink.types.has('run.started')) return sink.types;
      if (typeof sink.typesAfterStart !== 'function') return sink.types;
      try {
        return sink.typesAfterStart(started as Extract<TraceEvent, { type: 'run.started' }>) ?? sink.types;
      } catch (error) {
        // A sink that cannot say keeps its usual types: the call is recorded for it as before.
        this.sinkError(error, started, sink);
        return sink.types;
      }
    });
    // One sink (the usual case): its own list is the union, no set built per call.
    return { perSink, wanted: perSink.length === 1 ? (perSink[0] ?? null) : unionOf(perSink) };
  }

  /** Starts the record of one call (of an existing operation, for polls and reconciles) and emits `run.started`. */
  begin(action: { name: string; mode: Mode }, facts: CallFacts, record?: OperationRecord): RunTrace {
    const callId = facts.toolCallId ?? `${this.callPrefix}${++this.callSeq}`;
    const trace = new RunTrace(this, action.name, facts.runId, callId);
    if (record) trace.attach(record);
    trace.started(action.mode, facts);
    return trace;
  }

  /** The clock's time as ISO 8601. */
  isoNow(): string {
    return this.isoOf(this.clock.now());
  }

  /** A time in ms as ISO 8601 (events in the same millisecond share one string). */
  isoOf(ms: number): string {
    return isoTime(ms);
  }

  /** Whether some sink may narrow its event types per call (`typesAfterStart`). */
  readonly narrowsPerCall: boolean;

  /**
   * Hands one event to every sink that takes its type (`types`, or a call's own list from `typesAfterStart`,
   * one entry per sink); a failing sink is reported, never allowed to disturb the run.
   */
  dispatch(event: TraceEvent, callTypes?: readonly (ReadonlySet<string> | undefined)[]): void {
    const sinks = this.options.sinks;
    for (let i = 0; i < sinks.length; i++) {
      const sink = sinks[i]!;
      const types = callTypes ? callTypes[i] : sink.types;
      if (types && !types.has(event.type)) continue;
      try {
        const pending = sink.write(event);
        if (pending && typeof pending.then === 'function') this.watch(pending, event, sink);
      } catch (error) {
        this.sinkError(error, event, sink);
      }
    }
  }

  // Reports a sink's rejection. Apart from `dispatch`: a closure there would make every dispatch allocate a context
  // for the event it captures, whether or not the sink returned a promise.
  private watch(pending: Promise<void>, event: TraceEvent, sink: TraceSink): void {
    pending.then(undefined, (e) => this.sinkError(e, event, sink));
  }

  private sinkError(error: unknown, event: TraceEvent, sink: TraceSink): void {
    if (this.options.onSinkError) {
      try {
        this.options.onSinkError(error, event);
      } catch {
        // An error handler that throws has nowhere left to report to.
      }
      return;
    }
    if (this.warned.has(sink)) return;
    this.warned.add(sink);
    process.emitWarning(`readback trace sink failed: ${describeError(error)}`, 'ReadbackTraceWarning');
  }
}

// The event types some sink takes, or null when one of them takes every type.
function unionOf(lists: readonly (ReadonlySet<string> | undefined)[]): ReadonlySet<string> | null {
  if (!lists.every((types) => types !== undefined)) return null;
  const union = new Set<string>();
  for (const types of lists) for (const type of types as ReadonlySet<string>) union.add(type);
  return union;
}

/** The tracer `createRunner({ trace })` asks for, after checking its options; none when nothing would listen. */
export function createTracer(options: TraceOptions | undefined, clock: Clock): Tracer | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null || !Array.isArray(options.sinks)) {
    throw new ReadbackError('invalid_options', 'expected { sinks: TraceSink[] }', 'trace');
  }
  options.sinks.forEach((sink, i) => {
    if (typeof sink?.write !== 'function') {
      throw new ReadbackError('invalid_options', 'a sink needs a write(event) method', `trace.sinks[${i}]`);
    }
  });
  checkTraceOptions(options);
  // No sinks means no events: skip building them entirely.
  return options.sinks.length ? new Tracer(options, clock) : undefined;
}

/** Emits the call's completion (or its error) when it ends, passing the outcome through unchanged. */
export function traced(
  t: RunTrace,
  done: Promise<Completion>,
  shadowState?: ShadowState,
): Promise<Completion> {
  return done.then(
    (c) => {
      // Early exits and store failures are formed outside the drive: the trace must still see them as shadow.
      const shown = shadowState && !c.shadow ? shadowState.mark(c) : c;
      t.completed(shown);
      return shown;
    },
    (error) => {
      t.failed(error);
      throw error;
    },
  );
}
