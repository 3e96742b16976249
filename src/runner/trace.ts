import { hashOf, toRecordable } from '../canonical.js';
import type { Clock } from '../clock.js';
import type { Completion, Mode } from '../contract/types.js';
import type { Lifecycle, OperationRecord } from '../store/types.js';
import type {
  ClaimedOutcome,
  CompletionEvent,
  ObserveEvent,
  OperationReservedEvent,
  ReadPhase,
  TraceEntry,
  TraceEvent,
  TraceEventBase,
  TraceSink,
} from '../trace/events.js';
import { TRACE_FORMAT_VERSION } from '../trace/events.js';
import { createRedactor, type RedactionOptions, type Redactor } from '../trace/redact.js';
import { isAccepted, isRejected } from './markers.js';
import { describeError, type Reading } from './readback.js';
import { StepTimeout } from './timeout.js';

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

// Fields the runner produces itself (enums, counts, hashes, its own times): nothing to redact, so not scanned.
const RUNNER_FIELDS: ReadonlySet<string> = new Set([
  'entry',
  'mode',
  'turn',
  'valid',
  'argsHash',
  'rawHash',
  'fingerprint',
  'allowed',
  'policy',
  'reservation',
  'operationId',
  'attempt',
  'durationMs',
  'verificationMs',
  'claimed',
  'phase',
  'readAt',
  'result',
  'verdict',
  'terminal',
  'event',
  'from',
  'to',
  'status',
  'verified',
  'nextAllowedAction',
  'safeToRepeat',
  'observedAt',
  'tool',
  'idempotencyKey',
  // Built in `readFacts` from a target already redacted once per call and a hash.
  'query',
]);

type Payload<E extends TraceEvent> = Omit<E, Exclude<keyof TraceEventBase, 'operationId'> | 'type'>;
type Baseline = { ok: true; value: unknown } | { ok: false; code: string; reason: string };

/** Builds and dispatches trace events for one runner; `begin` opens one call's record. */
export class Tracer {
  readonly redactor: Redactor;
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
    this.wanted = lists.every((types) => types !== undefined)
      ? new Set(lists.flatMap((types) => [...(types as ReadonlySet<string>)]))
      : null;
  }

  /** Starts the record of one call (of an existing operation, for polls and reconciles) and emits `run.started`. */
  begin(action: { name: string; mode: Mode }, facts: CallFacts, record?: OperationRecord): RunTrace {
    const callId = facts.toolCallId ?? `${this.callPrefix}${++this.callSeq}`;
    const trace = new RunTrace(this, action.name, facts.runId, callId);
    if (record) trace.attach(record);
    const { runId: _r, toolCallId: _t, ...rest } = facts;
    trace.emit('run.started', { ...rest, mode: action.mode });
    return trace;
  }

  /** The clock's time as ISO 8601; consecutive events in the same millisecond share one string. */
  isoNow(): string {
    const now = this.clock.now();
    if (now !== this.lastMs) {
      this.lastMs = now;
      this.lastIso = new Date(now).toISOString();
    }
    return this.lastIso;
  }

  private lastMs = Number.NaN;
  private lastIso = '';

  /** Hands one event to every sink; a failing sink is reported, never allowed to disturb the run. */
  dispatch(event: TraceEvent): void {
    for (const sink of this.options.sinks) {
      if (sink.types && !sink.types.has(event.type)) continue;
      try {
        const pending = sink.write(event);
        if (pending && typeof pending.then === 'function')
          pending.then(undefined, (e) => this.sinkError(e, event, sink));
      } catch (error) {
        this.sinkError(error, event, sink);
      }
    }
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

/** The event builder for one call; the runner and its drives call it at each step. */
export class RunTrace {
  private seq = 0;
  private operationId: string | undefined;
  private readonly startedAt: number;
  private claim: ClaimedOutcome = 'none';
  private executeEndedAt: number | undefined;
  private inputHash: string | null | undefined;
  private target: string | undefined;

  constructor(
    private readonly tracer: Tracer,
    private readonly action: string,
    private readonly runId: string,
    readonly callId: string,
  ) {
    this.startedAt = tracer.clock.now();
  }

  /** Builds, redacts and dispatches one event. */
  emit<T extends TraceEvent['type']>(type: T, payload: Payload<Extract<TraceEvent, { type: T }>>): void {
    if (this.tracer.wanted && !this.tracer.wanted.has(type)) return;
    const body = this.tracer.redactor.redactExcept(payload, RUNNER_FIELDS);
    const event = {
      v: TRACE_FORMAT_VERSION,
      type,
      seq: ++this.seq,
      at: this.tracer.isoNow(),
      runId: this.runId,
      callId: this.callId,
      action: this.action,
      ...(this.operationId ? { operationId: this.operationId } : {}),
      ...body,
    } as unknown as TraceEvent;
    this.tracer.dispatch(event);
  }

  /** Records the validated (or rejected) arguments: hashed, raw only when opted in. */
  selected(valid: boolean, input: unknown, extra: { issues?: string[]; target?: string } = {}): void {
    const argsHash = hashOrNull(input);
    if (valid) this.inputHash = argsHash;
    this.emit('tool.selected', {
      tool: this.action,
      valid,
      argsHash,
      ...(this.tracer.options.recordArguments ? { args: toRecordable(input).value } : {}),
      ...extra,
    });
  }

  /** Records the authorization decision. */
  permission(policy: boolean, reason: string | undefined): void {
    this.emit('permission.decided', {
      allowed: reason === undefined,
      policy,
      ...(reason !== undefined ? { reason } : {}),
    });
  }

  /** Records how the operation record was found or made. */
  reserved(
    record: Pick<OperationRecord, 'id' | 'idempotencyKey' | 'fingerprint'>,
    reservation: OperationReservedEvent['reservation'],
  ): void {
    this.operationId = record.id;
    this.emit('operation.reserved', {
      operationId: record.id,
      idempotencyKey: record.idempotencyKey,
      fingerprint: record.fingerprint,
      reservation,
    });
    if (reservation === 'created') {
      this.emit('state.transition', {
        operationId: record.id,
        event: 'reserved',
        from: null,
        to: 'requested',
        status: null,
        attempt: 0,
      });
    }
  }

  /** Ties the call to an existing operation (poll, reconcile) without a reservation event. */
  attach(record: OperationRecord): void {
    this.operationId = record.id;
  }

  /** Records one store transition. */
  transition(event: string, from: Lifecycle, record: OperationRecord): void {
    this.emit('state.transition', {
      operationId: record.id,
      event,
      from,
      to: record.lifecycle,
      status: record.status,
      attempt: record.attempt,
    });
  }

  /** Wraps the execute call: `execute.started`, then the claim and the raw result, apart from any read. */
  async execute<T>(record: OperationRecord, call: () => Promise<T>): Promise<T> {
    const { clock, options } = this.tracer;
    this.emit('execute.started', {
      operationId: record.id,
      idempotencyKey: record.idempotencyKey,
      attempt: record.attempt,
    });
    const started = clock.now();
    const finished = (
      payload: Omit<
        Payload<Extract<TraceEvent, { type: 'execute.finished' }>>,
        'operationId' | 'attempt' | 'durationMs'
      >,
    ) => {
      this.executeEndedAt = clock.now();
      this.claim = payload.claimed;
      this.emit('execute.finished', {
        operationId: record.id,
        attempt: record.attempt,
        durationMs: this.executeEndedAt - started,
        ...payload,
      });
    };
    let raw: T;
    try {
      raw = await call();
    } catch (error) {
      const kind = error instanceof StepTimeout ? 'timed_out' : 'threw';
      finished({ claimed: 'error', normalized: { kind, reason: describeError(error) } });
      throw error;
    }
    const body = isRejected(raw) || isAccepted(raw) ? (raw.raw ?? null) : raw;
    const recorded = toRecordable(body).value;
    // With the raw result in the record its hash adds nothing; without it, the hash is what remains.
    const keepRaw = options.recordResults !== false;
    const rawHash = keepRaw ? null : hashOrNull(recorded);
    const normalized: Payload<Extract<TraceEvent, { type: 'execute.finished' }>>['normalized'] = isRejected(
      raw,
    )
      ? { kind: 'rejected', code: raw.code, reason: raw.reason }
      : isAccepted(raw)
        ? { kind: 'accepted', ref: toRecordable(raw.ref).value }
        : { kind: 'returned' };
    finished({
      claimed: isRejected(raw) ? 'rejected' : isAccepted(raw) ? 'accepted' : claimOf(options.claimOf, raw),
      ...(keepRaw ? { raw: recorded } : {}),
      ...(rawHash ? { rawHash } : {}),
      normalized,
    });
    return raw;
  }

  /** Wraps one authoritative read and records the query, the read time and what was seen. */
  async observe(phase: ReadPhase, record: OperationRecord, read: () => Promise<Reading>): Promise<Reading> {
    const started = this.tracer.clock.now();
    const reading = await read();
    const payload: Payload<ObserveEvent> = {
      ...this.readFacts(phase, record, started, reading.at),
      result: reading.kind,
    };
    if (reading.kind === 'observed') {
      if (reading.evaluation) {
        payload.verdict = reading.evaluation.verdict;
        payload.observed = reading.evaluation.evidence;
        payload.checks = reading.evaluation.checks;
      }
      if (reading.terminal) payload.terminal = reading.terminal;
    } else if (reading.kind === 'error') {
      payload.errorCode = reading.code;
      payload.reason = reading.reason;
    }
    this.emit('observe', payload);
    return reading;
  }

  /** Wraps the baseline read. */
  async baseline<B extends Baseline>(record: OperationRecord, read: () => Promise<B>): Promise<B> {
    const started = this.tracer.clock.now();
    const base = await read();
    const at = this.tracer.clock.now();
    this.emit('observe', {
      ...this.readFacts('baseline', record, started, at),
      result: !base.ok ? 'error' : base.value === null ? 'absent' : 'observed',
      ...(!base.ok ? { errorCode: base.code, reason: base.reason } : {}),
    });
    return base;
  }

  /** Emits the completion, with the claim and the verified outcome as separate fields. */
  completed(c: Completion): void {
    const now = this.tracer.clock.now();
    this.operationId = c.operationId;
    const payload: Payload<CompletionEvent> = {
      operationId: c.operationId,
      status: c.status,
      idempotencyKey: c.idempotencyKey,
      attempt: c.attempt,
      message: c.message,
      nextAllowedAction: c.nextAllowedAction,
      safeToRepeat: c.safeToRepeat,
      claimed: this.claim,
      verified: c.status === 'verified',
      checks: c.checks,
      durationMs: now - this.startedAt,
    };
    if (c.errorCode) payload.errorCode = c.errorCode;
    if (c.reason) payload.reason = c.reason;
    if (c.observedAt) payload.observedAt = c.observedAt;
    if (c.evidence) payload.evidence = c.evidence;
    if (c.units) payload.units = c.units;
    if (this.executeEndedAt !== undefined) payload.verificationMs = now - this.executeEndedAt;
    this.emit('completion', payload);
  }

  /** Emits `run.error` for a call that threw instead of completing. */
  failed(error: unknown): void {
    const e = error as { name?: unknown; code?: unknown };
    this.emit('run.error', {
      error: {
        name: typeof e?.name === 'string' ? e.name : 'Error',
        ...(typeof e?.code === 'string' ? { code: e.code } : {}),
        message: describeError(error),
      },
    });
  }

  private readFacts(phase: ReadPhase, record: OperationRecord, started: number, at: number) {
    if (this.inputHash === undefined) this.inputHash = hashOrNull(record.input);
    this.target ??= this.tracer.redactor.redact(record.target);
    return {
      operationId: record.id,
      phase,
      attempt: record.attempt,
      query: { target: this.target, inputHash: this.inputHash },
      readAt: new Date(at).toISOString(),
      durationMs: at - started,
    };
  }
}

function hashOrNull(value: unknown): string | null {
  try {
    return hashOf(value);
  } catch {
    return null;
  }
}

function claimOf(custom: TraceOptions['claimOf'], raw: unknown): ClaimedOutcome {
  try {
    if (custom) return custom(raw) === 'failure' ? 'failure' : 'success';
    return defaultClaim(raw);
  } catch {
    return 'success';
  }
}

// A body that says it failed (`ok: false`, `success: false`, an `error`, an HTTP error status) claims failure.
function defaultClaim(raw: unknown): ClaimedOutcome {
  if (typeof raw !== 'object' || raw === null) return 'success';
  const r = raw as Record<string, unknown>;
  if (r.ok === false || r.success === false || r.isError === true) return 'failure';
  if (r.error !== undefined && r.error !== null && r.error !== false) return 'failure';
  const status = r.status ?? r.statusCode;
  return typeof status === 'number' && status >= 400 ? 'failure' : 'success';
}
