/**
 * readback/otel: OpenTelemetry spans and metrics from the run record, following the GenAI semantic
 * conventions for `execute_tool`. Needs only `@opentelemetry/api` (an optional peer dependency).
 */
import {
  type Attributes,
  type Counter,
  type Histogram,
  type Meter,
  metrics,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { ReadbackError } from '../errors.js';
import type { CompletionEvent, TraceEvent, TraceEventType, TraceSink } from '../trace/events.js';

/** Span attribute and metric names this adapter writes, for dashboards and tests. */
export const OTEL_NAMES = {
  operationName: 'gen_ai.operation.name',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
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
  completionsMetric: 'readback.completions',
  verificationDurationMetric: 'readback.verification.duration',
  reportedSuccessMetric: 'readback.reported_success',
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
}

/** A trace sink that turns each call's events into one `execute_tool {name}` span plus metrics. */
export interface OtelSink extends TraceSink {
  /** Spans started and not yet ended (calls still running). */
  openSpans(): number;
}

interface OpenCall {
  span: Span;
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

// Metric attribute sets kept for reuse; past this many (a runaway action count) each call builds its own.
const ATTRIBUTE_SET_LIMIT = 1024;

// Failed and partial calls did not do what was asked; unknown and pending are uncertainty, not errors.
const ERROR_STATUSES = new Set(['failed', 'partial']);

/**
 * Creates the OpenTelemetry sink: pass it in `createRunner({ trace: { sinks: [otelSink()] } })`.
 * Events arrive already redacted, so arguments and results (when opted in) are redacted too.
 */
export function otelSink(options: OtelSinkOptions = {}): OtelSink {
  if (typeof options !== 'object' || options === null) {
    throw new ReadbackError('invalid_options', 'expected an options object', 'otelSink(options)');
  }
  const tracer = options.tracer ?? trace.getTracer('readback');
  const meter = options.meter ?? metrics.getMeter('readback');
  const toolType = options.toolType ?? 'function';
  // Synchronous counters, not observable ones: two sinks on one meter (two runners in a process) must add up.
  const completions: Counter = meter.createCounter(OTEL_NAMES.completionsMetric, {
    description: 'Completed tool calls by readback status and action',
    unit: '{call}',
  });
  const verification: Histogram = meter.createHistogram(OTEL_NAMES.verificationDurationMetric, {
    description: 'Time from the end of execute to the readback decision',
    unit: 's',
    advice: { explicitBucketBoundaries: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] },
  });
  const reported: Counter = meter.createCounter(OTEL_NAMES.reportedSuccessMetric, {
    description:
      'Tool calls whose raw result claimed success, by whether readback verified the effect (the reported-vs-verified gap)',
    unit: '{call}',
  });
  const open = new Map<string, OpenCall>();
  // Metric attribute sets repeat (action × status × mode): one frozen object each instead of one per call.
  const attributeSets = new Map<string, Attributes>();

  function metricAttributes(key: string, build: () => Attributes): Attributes {
    const known = attributeSets.get(key);
    if (known) return known;
    const made = Object.freeze(build());
    if (attributeSets.size < ATTRIBUTE_SET_LIMIT) attributeSets.set(key, made);
    return made;
  }

  function start(event: Extract<TraceEvent, { type: 'run.started' }>): void {
    const attributes: Attributes = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': event.action,
      'gen_ai.tool.call.id': event.callId,
      'gen_ai.tool.type': toolType,
      'readback.mode': event.mode,
      'readback.run.id': event.runId,
      'readback.entry': event.entry,
    };
    if (event.turn !== undefined) attributes['readback.turn'] = event.turn;
    if (event.tenant !== undefined) attributes['readback.tenant'] = event.tenant;
    if (event.environment !== undefined) attributes['readback.environment'] = event.environment;
    if (event.toolsExposed) attributes['readback.tools_exposed'] = event.toolsExposed;
    const span = tracer.startSpan(`execute_tool ${event.action}`, { kind: SpanKind.INTERNAL, attributes });
    // A span nobody records (no SDK, or sampled out) gets no attributes or events: metrics still count the call.
    open.set(event.callId, {
      span,
      recording: span.isRecording(),
      action: event.action,
      mode: event.mode,
      attributes: {},
    });
  }

  function finish(call: OpenCall, event: CompletionEvent): void {
    const { span } = call;
    const failed = ERROR_STATUSES.has(event.status);
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
      if (failed) attributes[OTEL_NAMES.errorType] = event.errorCode ?? event.status;
      span.setAttributes(attributes);
    }
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: event.errorCode ?? event.status });
    span.end();

    const { action, mode } = call;
    const status = event.status;
    const byMode = metricAttributes(`c\0${action}\0${status}\0${mode}`, () => ({
      'gen_ai.tool.name': action,
      'readback.status': status,
      'readback.mode': mode,
    }));
    completions.add(1, byMode);
    if (event.verificationMs !== undefined) {
      const byCall = metricAttributes(`v\0${action}\0${status}`, () => ({
        'gen_ai.tool.name': action,
        'readback.status': status,
      }));
      verification.record(event.verificationMs / 1000, byCall);
    }
    if (event.claimed === 'success') {
      const verified = event.verified;
      const shadow = !!event.shadow;
      const byOutcome = metricAttributes(`r\0${action}\0${status}\0${verified}\0${shadow}`, () => ({
        'gen_ai.tool.name': action,
        'readback.status': status,
        'readback.verified': verified,
        'readback.shadow': shadow,
      }));
      reported.add(1, byOutcome);
    }
  }

  function write(event: TraceEvent): void {
    if (event.type === 'run.started') {
      start(event);
      return;
    }
    const call = open.get(event.callId);
    if (!call) return;
    switch (event.type) {
      case 'completion':
        open.delete(event.callId);
        finish(call, event);
        return;
      case 'run.error': {
        open.delete(event.callId);
        const errorType = event.error.code ?? event.error.name;
        if (call.recording) {
          call.attributes[OTEL_NAMES.errorType] = errorType;
          call.span.setAttributes(call.attributes);
        }
        call.span.setStatus({ code: SpanStatusCode.ERROR, message: errorType });
        call.span.end();
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
        span.addEvent('readback.execute', fields);
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
        span.addEvent(event.phase === 'poll' ? 'readback.poll' : 'readback.observe', fields);
        return;
      }
      default:
        return;
    }
  }

  return { write, types: OTEL_EVENT_TYPES, openSpans: () => open.size };
}

function json(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}
