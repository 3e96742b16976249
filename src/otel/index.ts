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

  function start(event: Extract<TraceEvent, { type: 'run.started' }>): void {
    const attributes: Attributes = {
      [OTEL_NAMES.operationName]: 'execute_tool',
      [OTEL_NAMES.toolName]: event.action,
      [OTEL_NAMES.toolCallId]: event.callId,
      [OTEL_NAMES.toolType]: toolType,
      [OTEL_NAMES.mode]: event.mode,
      'readback.run.id': event.runId,
      'readback.entry': event.entry,
    };
    if (event.turn !== undefined) attributes['readback.turn'] = event.turn;
    if (event.tenant !== undefined) attributes['readback.tenant'] = event.tenant;
    if (event.environment !== undefined) attributes['readback.environment'] = event.environment;
    if (event.toolsExposed) attributes['readback.tools_exposed'] = event.toolsExposed;
    const span = tracer.startSpan(`execute_tool ${event.action}`, { kind: SpanKind.INTERNAL, attributes });
    open.set(event.callId, { span, action: event.action, mode: event.mode, attributes: {} });
  }

  function finish(call: OpenCall, event: CompletionEvent): void {
    const { span } = call;
    const attributes: Attributes = {
      ...call.attributes,
      [OTEL_NAMES.status]: event.status,
      [OTEL_NAMES.operationId]: event.operationId,
      [OTEL_NAMES.attempt]: event.attempt,
      [OTEL_NAMES.claimed]: event.claimed,
      [OTEL_NAMES.verified]: event.verified,
      'readback.next_allowed_action': event.nextAllowedAction,
    };
    if (event.errorCode) attributes[OTEL_NAMES.errorCode] = event.errorCode;
    if (options.recordResults && call.raw !== undefined) attributes[OTEL_NAMES.toolResult] = json(call.raw);
    if (ERROR_STATUSES.has(event.status)) {
      attributes[OTEL_NAMES.errorType] = event.errorCode ?? event.status;
      span.setStatus({ code: SpanStatusCode.ERROR, message: event.errorCode ?? event.status });
    }
    span.setAttributes(attributes);
    span.end();

    const byCall = { [OTEL_NAMES.toolName]: call.action, [OTEL_NAMES.status]: event.status };
    completions.add(1, { ...byCall, [OTEL_NAMES.mode]: call.mode });
    if (event.verificationMs !== undefined) verification.record(event.verificationMs / 1000, byCall);
    if (event.claimed === 'success') reported.add(1, { ...byCall, [OTEL_NAMES.verified]: event.verified });
  }

  function write(event: TraceEvent): void {
    if (event.type === 'run.started') {
      start(event);
      return;
    }
    const call = open.get(event.callId);
    if (!call) return;
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
      case 'execute.finished':
        call.raw = event.raw;
        span.addEvent('readback.execute', {
          [OTEL_NAMES.attempt]: event.attempt,
          [OTEL_NAMES.claimed]: event.claimed,
          'readback.execute.outcome': event.normalized.kind,
          'readback.duration_ms': event.durationMs,
          ...(event.normalized.code ? { [OTEL_NAMES.errorCode]: event.normalized.code } : {}),
        });
        return;
      case 'observe':
        span.addEvent(event.phase === 'poll' ? 'readback.poll' : 'readback.observe', {
          'readback.read.phase': event.phase,
          'readback.read.result': event.result,
          'readback.read.at': event.readAt,
          'readback.duration_ms': event.durationMs,
          ...(event.verdict ? { 'readback.read.verdict': event.verdict } : {}),
          ...(event.terminal ? { 'readback.read.terminal': event.terminal } : {}),
          ...(event.errorCode ? { [OTEL_NAMES.errorCode]: event.errorCode } : {}),
        });
        return;
      case 'completion':
        open.delete(event.callId);
        finish(call, event);
        return;
      case 'run.error':
        open.delete(event.callId);
        span.setAttributes({ ...attributes, [OTEL_NAMES.errorType]: event.error.code ?? event.error.name });
        span.setStatus({ code: SpanStatusCode.ERROR, message: event.error.code ?? event.error.name });
        span.end();
        return;
      default:
        return;
    }
  }

  return { write, types: OTEL_EVENT_TYPES, openSpans: () => open.size };
}

function json(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}
