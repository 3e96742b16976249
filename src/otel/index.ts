/**
 * readback/otel: OpenTelemetry spans and metrics from the run record, following the GenAI semantic
 * conventions for `execute_tool` (the `gen_ai.execute_tool.internal` span and the
 * `gen_ai.execute_tool.duration` metric of open-telemetry/semantic-conventions-genai) and the general
 * "Recording errors" rules. Needs only `@opentelemetry/api` (an optional peer dependency).
 */
import {
  type Attributes,
  createNoopMeter,
  type Histogram,
  type Meter,
  metrics,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { optionalBoolean, ReadbackError } from '../errors.js';
import type { CompletionEvent, TraceEvent, TraceEventType, TraceSink } from '../trace/events.js';

/** Span attribute and metric names this adapter writes, for dashboards and tests. */
export const OTEL_NAMES = {
  operationName: 'gen_ai.operation.name',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  toolDescription: 'gen_ai.tool.description',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
  errorType: 'error.type',
  status: 'readback.status',
  operationId: 'readback.operation.id',
  mode: 'readback.mode',
  attempt: 'readback.attempt',
  errorCode: 'readback.error.code',
  claimed: 'readback.claimed',
  verified: 'readback.verified',
  toolDurationMetric: 'gen_ai.execute_tool.duration',
  completionsMetric: 'readback.completions',
  verificationDurationMetric: 'readback.verification.duration',
  reportedSuccessMetric: 'readback.reported_successes',
} as const;

/** Options of `otelSink`. */
export interface OtelSinkOptions {
  /** Defaults to `trace.getTracer('readback')` from the global provider. */
  tracer?: Tracer;
  /** Defaults to `metrics.getMeter('readback')` from the global provider. */
  meter?: Meter;
  /** `gen_ai.tool.type` (default `function`: the application runs the tool). */
  toolType?: string;
  /** Record `gen_ai.tool.call.arguments`; the run record must also keep them (`trace.recordArguments`). */
  recordArguments?: boolean;
  /** Record `gen_ai.tool.call.result`: the raw (redacted) execute result, i.e. what the tool claimed. */
  recordResults?: boolean;
  /** The actions the runner serves: their descriptions fill `gen_ai.tool.description` (recommended). */
  actions?: readonly { name: string; description: string }[];
}

/** A trace sink that turns each call's events into one `execute_tool {name}` span plus metrics. */
export interface OtelSink extends TraceSink {
  /** Spans started and not yet ended (calls still running). */
  openSpans(): number;
}

interface OpenCall {
  span: Span;
  runId: string;
  // `run` for the agent's own call (`runner.run` or `runner.shadow`), else a poll, reconcile or review.
  entry: string;
  // The span's start as a performance.now() reading: the span is timed from it, and so is the duration metric.
  startedAt: number;
  // False for the API's no-op span or a sampled-out one: attributes and events would be thrown away.
  recording: boolean;
  action: string;
  mode: string;
  raw?: unknown;
  // Attributes learned along the way, set in one call when the span ends (each setAttribute call has a cost).
  attributes: Attributes;
}

// The events spans and metrics are made from; a runner whose only sink is this one skips building the rest.
const OTEL_EVENT_TYPES: ReadonlySet<TraceEventType> = new Set<TraceEventType>([
  'run.started',
  'tool.selected',
  'permission.decided',
  'operation.reserved',
  'execute.finished',
  'observe',
  'completion',
  'run.error',
]);

// What a call whose span does not record still needs: its end, for the metrics. With no metrics either, nothing.
const METRIC_EVENT_TYPES: ReadonlySet<TraceEventType> = new Set<TraceEventType>(['completion', 'run.error']);
const NO_EVENT_TYPES: ReadonlySet<TraceEventType> = new Set<TraceEventType>();

// One call's count under one attribute set, read by the observable counters at collection time.
interface Count {
  readonly attributes: Attributes;
  value: number;
}

// The call counts of every sink on one meter. Counting a call is then a few map lookups and an increment,
// where a synchronous counter's `add` costs the SDK a hash of the attribute set (a sorted JSON text) per call;
// the SDK reads the totals only when a reader collects. Kept per meter, not per sink, so two sinks on one
// meter (two runners in a process) add up instead of reporting over each other.
class Tally {
  readonly completions: Count[] = [];
  readonly reported: Count[] = [];
  // action → status → mode, and action → status → verified/shadow index: nested maps of the event's own
  // strings, which hash once, instead of a key string built (and hashed) per call.
  private readonly completionIndex = new Map<string, Map<string, Map<string, Count>>>();
  private readonly reportedIndex = new Map<string, Map<string, Count[]>>();

  constructor(meter: Meter) {
    meter
      .createObservableCounter(OTEL_NAMES.completionsMetric, {
        description: 'Completed tool calls by readback status and action',
        unit: '{call}',
      })
      .addCallback((result) => {
        for (const c of this.completions) result.observe(c.value, c.attributes);
      });
    meter
      .createObservableCounter(OTEL_NAMES.reportedSuccessMetric, {
        description:
          'Tool calls whose raw result claimed success, by whether readback verified the effect (the reported-vs-verified gap)',
        unit: '{call}',
      })
      .addCallback((result) => {
        for (const c of this.reported) result.observe(c.value, c.attributes);
      });
  }

  completed(action: string, status: string, mode: string, entry: string, shadow: boolean): void {
    const byStatus = child(this.completionIndex, action, () => new Map<string, Map<string, Count>>());
    const byMode = child(byStatus, status, () => new Map<string, Count>());
    // A shadow completion is counted apart (its own key, built only for shadow calls): a shadow `verified`
    // is an operator observation and must not add to the verified completions a dashboard reads as proof. So
    // is each entry (a poll or reconcile completes a call too: one operation may count once as `pending` from
    // the agent's call and once as `verified` from the poll that settled it).
    const key = `${mode}\u0000${entry}${shadow ? '\u0000shadow' : ''}`;
    let count = byMode.get(key);
    if (!count) {
      count = {
        attributes: {
          'gen_ai.tool.name': action,
          'readback.status': status,
          'readback.mode': mode,
          'readback.entry': entry,
          'readback.shadow': shadow,
        },
        value: 0,
      };
      byMode.set(key, count);
      this.completions.push(count);
    }
    count.value++;
  }

  claimedSuccess(action: string, status: string, verified: boolean, shadow: boolean): void {
    const byStatus = child(this.reportedIndex, action, () => new Map<string, Count[]>());
    const counts = child(byStatus, status, () => []);
    const slot = (verified ? 1 : 0) + (shadow ? 2 : 0);
    let count = counts[slot];
    if (!count) {
      count = {
        attributes: {
          'gen_ai.tool.name': action,
          'readback.status': status,
          'readback.verified': verified,
          'readback.shadow': shadow,
        },
        value: 0,
      };
      counts[slot] = count;
      this.reported.push(count);
    }
    count.value++;
  }
}

const tallies = new WeakMap<Meter, Tally>();

function tallyOf(meter: Meter): Tally {
  let tally = tallies.get(meter);
  if (!tally) {
    tally = new Tally(meter);
    tallies.set(meter, tally);
  }
  return tally;
}

function child<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

// Failed and partial calls did not do what was asked. Unknown and pending are not errors: the call returned
// a completion, the effect may yet land (or already has), and an error thrown by execute that readback then
// resolved is a handled error, which "Recording errors" says not to record on the span or its metrics.
const ERROR_STATUSES = new Set(['failed', 'partial']);

// The bucket boundaries the GenAI conventions give `gen_ai.execute_tool.duration` (seconds).
const TOOL_DURATION_BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

// A wrong tracer or meter would otherwise fail in the first run (and only as a sink warning), a wrong flag
// would be read as truthy, and a non-string tool type would be exported as a number.
function checkOptions(options: OtelSinkOptions): void {
  const { tracer, meter, toolType, actions } = options as Record<string, unknown>;
  if (tracer !== undefined && typeof (tracer as Partial<Tracer> | null)?.startSpan !== 'function') {
    throw new ReadbackError(
      'invalid_options',
      'must be an OpenTelemetry Tracer (with startSpan)',
      'otelSink(options).tracer',
    );
  }
  const m = meter as Partial<Meter> | null | undefined;
  if (
    meter !== undefined &&
    (typeof m?.createHistogram !== 'function' || typeof m.createObservableCounter !== 'function')
  ) {
    throw new ReadbackError(
      'invalid_options',
      'must be an OpenTelemetry Meter (with createHistogram and createObservableCounter)',
      'otelSink(options).meter',
    );
  }
  if (toolType !== undefined && (typeof toolType !== 'string' || toolType === '')) {
    throw new ReadbackError('invalid_options', 'must be a non-empty string', 'otelSink(options).toolType');
  }
  if (
    actions !== undefined &&
    (!Array.isArray(actions) ||
      !actions.every(
        (a) => typeof a?.name === 'string' && a.name !== '' && typeof a.description === 'string',
      ))
  ) {
    throw new ReadbackError(
      'invalid_options',
      'must be an array of actions (each with a name and a description)',
      'otelSink(options).actions',
    );
  }
  optionalBoolean(options.recordArguments, 'otelSink(options).recordArguments');
  optionalBoolean(options.recordResults, 'otelSink(options).recordResults');
}

/**
 * Creates the OpenTelemetry sink: pass it in `createRunner({ trace: { sinks: [otelSink()] } })`.
 * Events arrive already redacted, so arguments and results (when opted in) are redacted too.
 */
export function otelSink(options: OtelSinkOptions = {}): OtelSink {
  if (typeof options !== 'object' || options === null) {
    throw new ReadbackError('invalid_options', 'expected an options object', 'otelSink(options)');
  }
  checkOptions(options);
  const tracer = options.tracer ?? trace.getTracer('readback');
  const meter = options.meter ?? metrics.getMeter('readback');
  const toolType = options.toolType ?? 'function';
  // Completions and claimed successes are observable counters fed from a per-meter tally (see `Tally`); the
  // latency histogram has to be recorded per call.
  const tally = tallyOf(meter);
  // The API's no-op meter (no MeterProvider was registered when the meter was got; the metrics API has no proxy,
  // so it stays a no-op): a call whose span does not record then has nothing at all to give this sink.
  const metricsLive = meter !== createNoopMeter();
  // The event types the last `run.started` left this sink wanting for the rest of its call (`typesAfterStart`).
  let lastStarted: TraceEvent | undefined;
  let lastStartedTypes: ReadonlySet<TraceEventType> | undefined;
  const descriptions = new Map((options.actions ?? []).map((a) => [a.name, a.description] as const));
  const toolDuration: Histogram = meter.createHistogram(OTEL_NAMES.toolDurationMetric, {
    description: 'The duration of a single tool execution (the execute_tool span)',
    unit: 's',
    advice: { explicitBucketBoundaries: TOOL_DURATION_BUCKETS },
  });
  // The duration metric's attribute sets (action × error type, '' for none), one object each.
  const durationAttributes = new Map<string, Map<string, Attributes>>();
  const verification: Histogram = meter.createHistogram(OTEL_NAMES.verificationDurationMetric, {
    description: 'Time from the end of execute to the readback decision',
    unit: 's',
    advice: { explicitBucketBoundaries: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] },
  });
  // Calls still running, by call id. That id is the model's tool call id when one was given, which two calls can
  // share (a client re-sending a call still in flight, a model server that numbers its calls per reply): each
  // gets its own span, found by run id among those sharing the call id, else the oldest (the first to finish).
  const open = new Map<string, OpenCall[]>();
  let openCount = 0;
  // The histogram's attribute sets (action × status), one object each instead of one per call.
  const latencyAttributes = new Map<string, Map<string, Attributes>>();

  function start(event: Extract<TraceEvent, { type: 'run.started' }>): void {
    const attributes: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': event.action,
      'gen_ai.tool.type': toolType,
      'readback.mode': event.mode,
      'readback.run.id': event.runId,
      'readback.entry': event.entry,
    };
    // Only the model's own id (`ctx.toolCallId`): an id readback generated would pass for one it never sent.
    if (event.toolCallId !== undefined) attributes[OTEL_NAMES.toolCallId] = event.toolCallId;
    if (event.turn !== undefined) attributes['readback.turn'] = event.turn;
    if (event.tenant !== undefined) attributes['readback.tenant'] = event.tenant;
    if (event.environment !== undefined) attributes['readback.environment'] = event.environment;
    if (event.toolsExposed) attributes['readback.tools_exposed'] = event.toolsExposed;
    const description = descriptions.get(event.action);
    if (description !== undefined) attributes[OTEL_NAMES.toolDescription] = description;
    // Start, events and end are all given as performance.now() readings (a TimeInput the API accepts), so the
    // span's duration is exactly the one `gen_ai.execute_tool.duration` records, as the conventions ask.
    const startedAt = performance.now();
    const span = tracer.startSpan(`execute_tool ${event.action}`, {
      kind: SpanKind.INTERNAL,
      attributes,
      startTime: startedAt,
    });
    // A span nobody records (no SDK, or sampled out) gets no attributes or events: metrics still count the call.
    const recording = span.isRecording();
    lastStarted = event;
    lastStartedTypes = recording ? undefined : metricsLive ? METRIC_EVENT_TYPES : NO_EVENT_TYPES;
    // Nothing to record and nothing to count: the call is not followed (its span, a no-op, needs no end).
    if (!recording && !metricsLive) return;
    const call: OpenCall = {
      span,
      runId: event.runId,
      entry: event.entry,
      startedAt,
      recording,
      action: event.action,
      mode: event.mode,
      attributes: {},
    };
    const sharing = open.get(event.callId);
    if (sharing) sharing.push(call);
    else open.set(event.callId, [call]);
    openCount++;
  }

  // The open call an event belongs to; a completion or error also takes it off the open list.
  function callOf(event: TraceEvent, ends: boolean): OpenCall | undefined {
    const calls = open.get(event.callId);
    if (!calls) return undefined;
    const same = calls.length > 1 ? calls.findIndex((c) => c.runId === event.runId) : 0;
    const i = same < 0 ? 0 : same;
    const call = calls[i]!;
    if (ends) {
      calls.splice(i, 1);
      if (calls.length === 0) open.delete(event.callId);
      openCount--;
    }
    return call;
  }

  // Ends the span and records its duration, with `error.type` when the call failed (the same value as the span).
  function end(call: OpenCall, errorType: string | undefined): void {
    const endedAt = performance.now();
    call.span.end(endedAt);
    const byError = child(durationAttributes, call.action, () => new Map<string, Attributes>());
    const attributes = child(byError, errorType ?? '', () => {
      const set: Attributes = { 'gen_ai.tool.name': call.action, 'gen_ai.tool.type': toolType };
      if (errorType !== undefined) set[OTEL_NAMES.errorType] = errorType;
      return set;
    });
    toolDuration.record((endedAt - call.startedAt) / 1000, attributes);
  }

  function finish(call: OpenCall, event: CompletionEvent): void {
    const { span } = call;
    // `runner.shadow` hands the live tool's exception to its caller unchanged: an error nobody handled, so the
    // span records it (as `_OTHER`, the exception's type not being in the record) though `unknown` is no error.
    const rethrown = event.shadow !== undefined && event.claimed === 'error' && call.entry === 'run';
    const failed = ERROR_STATUSES.has(event.status) || rethrown;
    const errorType = ERROR_STATUSES.has(event.status)
      ? (event.errorCode ?? event.status)
      : rethrown
        ? '_OTHER'
        : undefined;
    if (call.recording) {
      // The attributes gathered along the way, completed and set in one call (each setAttribute has a cost).
      const attributes = call.attributes;
      attributes['readback.status'] = event.status;
      attributes['readback.operation.id'] = event.operationId;
      attributes['readback.attempt'] = event.attempt;
      attributes['readback.claimed'] = event.claimed;
      attributes['readback.verified'] = event.verified;
      attributes['readback.next_allowed_action'] = event.nextAllowedAction;
      attributes['readback.shadow'] = event.shadow !== undefined;
      if (event.errorCode) attributes[OTEL_NAMES.errorCode] = event.errorCode;
      if (options.recordResults && call.raw !== undefined) attributes[OTEL_NAMES.toolResult] = json(call.raw);
      if (errorType !== undefined) attributes[OTEL_NAMES.errorType] = errorType;
      span.setAttributes(attributes);
    }
    // No status description: it would only repeat `error.type`, which "Recording errors" advises against, and
    // the completion's reason and message can quote observed values (caller data).
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
    end(call, errorType);

    const { action, mode } = call;
    const status = event.status;
    tally.completed(action, status, mode, call.entry, event.shadow !== undefined);
    if (event.verificationMs !== undefined) {
      const byStatus = child(latencyAttributes, action, () => new Map<string, Attributes>());
      const attributes = child(byStatus, status, () => ({
        'gen_ai.tool.name': action,
        'readback.status': status,
      }));
      verification.record(event.verificationMs / 1000, attributes);
    }
    if (event.claimed === 'success') tally.claimedSuccess(action, status, event.verified, !!event.shadow);
  }

  function write(event: TraceEvent): void {
    if (event.type === 'run.started') {
      start(event);
      return;
    }
    const call = callOf(event, event.type === 'completion' || event.type === 'run.error');
    if (!call) return;
    switch (event.type) {
      case 'completion':
        finish(call, event);
        return;
      case 'run.error': {
        const errorType = event.error.code ?? event.error.name;
        if (call.recording) {
          call.attributes[OTEL_NAMES.errorType] = errorType;
          call.span.setAttributes(call.attributes);
        }
        // A thrown call's description is its exception's message, as "Recording errors" asks; it passed the
        // run record's redaction, and is what the run record itself keeps.
        call.span.setStatus({ code: SpanStatusCode.ERROR, message: event.error.message });
        end(call, errorType);
        return;
      }
      default:
        if (call.recording) annotate(call, event);
        return;
    }
  }

  // The span's attributes and events from the steps between start and end.
  function annotate(call: OpenCall, event: TraceEvent): void {
    const { span, attributes } = call;
    switch (event.type) {
      case 'tool.selected':
        if (event.argsHash) attributes['readback.args_hash'] = event.argsHash;
        if (event.target) attributes['readback.target'] = event.target;
        if (options.recordArguments && event.args !== undefined) {
          attributes[OTEL_NAMES.toolArguments] = json(event.args);
        }
        return;
      case 'permission.decided':
        attributes['readback.permission.allowed'] = event.allowed;
        return;
      case 'operation.reserved':
        attributes['readback.reservation'] = event.reservation;
        return;
      case 'execute.finished': {
        call.raw = event.raw;
        const fields: Attributes = {
          'readback.attempt': event.attempt,
          'readback.claimed': event.claimed,
          'readback.execute.outcome': event.normalized.kind,
          'readback.duration_ms': event.durationMs,
        };
        if (event.normalized.code) fields[OTEL_NAMES.errorCode] = event.normalized.code;
        span.addEvent('readback.execute', fields, performance.now());
        return;
      }
      case 'observe': {
        const fields: Attributes = {
          'readback.read.phase': event.phase,
          'readback.read.result': event.result,
          'readback.read.at': event.readAt,
          'readback.duration_ms': event.durationMs,
        };
        if (event.verdict) fields['readback.read.verdict'] = event.verdict;
        if (event.terminal) fields['readback.read.terminal'] = event.terminal;
        if (event.errorCode) fields[OTEL_NAMES.errorCode] = event.errorCode;
        span.addEvent(
          event.phase === 'poll' ? 'readback.poll' : 'readback.observe',
          fields,
          performance.now(),
        );
        return;
      }
      default:
        return;
    }
  }

  // A call whose span does not record needs only its end (for the metrics), or nothing when there are none.
  function typesAfterStart(started: TraceEvent): ReadonlySet<TraceEventType> | undefined {
    return started === lastStarted ? lastStartedTypes : undefined;
  }

  return { write, types: OTEL_EVENT_TYPES, typesAfterStart, openSpans: () => openCount };
}

// Tool arguments and results are structured values; spans cannot hold those in this API, so the conventions
// ask for JSON text, and for a string that is already JSON to be read as the value it encodes. Any other string
// is encoded as a JSON string, so the attribute always parses.
function json(value: unknown): string {
  if (typeof value !== 'string') return JSON.stringify(value);
  try {
    JSON.parse(value);
    return value;
  } catch {
    return JSON.stringify(value);
  }
}
