import { hashOf, toRecordable } from '../canonical.js';
import type { Completion, Mode, Status } from '../contract/types.js';
import type { Lifecycle, OperationRecord } from '../store/types.js';
import type {
  ClaimedOutcome,
  ExecuteFinishedEvent,
  OperationReservedEvent,
  ReadPhase,
  TraceEvent,
  TraceEventType,
} from '../trace/events.js';
import { TRACE_FORMAT_VERSION } from '../trace/events.js';
import type { Redactor } from '../trace/redact.js';
import { type Accepted, isAccepted, isRejected, type Rejected } from './markers.js';
import { describeError, type Reading } from './readback.js';
import { classifyClaim } from './shadow.js';
import { StepTimeout } from './timeout.js';
import type { CallFacts, TraceOptions, Tracer } from './tracer.js';

// An event under construction. Each builder below sets the fields of its type (docs/trace-format.md) in one
// object, in schema order, and passes every field that can hold caller data (arguments, raw results, observed
// fields, reasons, messages, caller-supplied facts) through `scrub`; the runner's own fixed-shape fields (ids,
// enums, counts, hashes, its own times) are set as they are. A field added to a builder that can carry caller
// data must go through `scrub` too: nothing else redacts it.
type Fields = Record<string, unknown>;
type Baseline = { ok: true; value: unknown } | { ok: false; code: string; reason: string };
type Normalized = ExecuteFinishedEvent['normalized'];
type Finished = { claimed: ClaimedOutcome; raw?: unknown; rawHash?: string | null; normalized: Normalized };

// The caller-supplied facts of `run.started` (after the runner-checked `turn`), in the order the event lists them.
const CALLER_FACTS = ['tenant', 'actor', 'environment', 'scope', 'toolsExposed'] as const;

/** The event builder for one call; the runner and its drives call it at each step. */
export class RunTrace {
  private seq = 0;
  private operationId: string | undefined;
  private readonly startedAt: number;
  private claim: ClaimedOutcome = 'none';
  // Whether this is the agent's own call (`run`): only there can a shadow verdict's claim be this call's.
  private ownCall = false;
  private executeEndedAt: number | undefined;
  // When `tool.selected` was stamped: a decision with no policy is made in the same step (see `permission`).
  private selectedAt: number | undefined;
  private inputHash: string | null | undefined;
  // The target as given and as redacted, so a call's reads do not scan the same string again.
  private targetSeen: string | undefined;
  private targetRedacted = '';
  // The last read's checks and evidence as given and as redacted: the completion usually carries the very same
  // objects (by identity; the runner never changes them in between), so it reuses their redacted form.
  private checksSeen: unknown;
  private checksRedacted: unknown;
  private evidenceSeen: unknown;
  private evidenceRedacted: unknown;
  // The event types some sink takes in this call (null: all), and each sink's own list once a sink narrowed
  // its types for this call (`typesAfterStart`); until then, the runner-wide ones.
  private wanted: ReadonlySet<string> | null;
  private callTypes: (ReadonlySet<string> | undefined)[] | undefined;

  constructor(
    private readonly tracer: Tracer,
    private readonly action: string,
    private readonly runId: string,
    readonly callId: string,
  ) {
    this.startedAt = tracer.clock.now();
    this.wanted = tracer.wanted;
  }

  // Starts an event with the fields every event carries, or returns undefined when no sink takes its type.
  // `ms` is a time the caller already read for this moment (each clock read costs ~30–100 ns).
  private open(type: TraceEventType, ms?: number): Fields | undefined {
    const wanted = this.wanted;
    if (wanted !== null && !wanted.has(type)) return undefined;
    const event: Fields = {
      v: TRACE_FORMAT_VERSION,
      type,
      seq: ++this.seq,
      at: ms === undefined ? this.tracer.isoNow() : this.tracer.isoOf(ms),
      runId: this.runId,
      callId: this.callId,
      action: this.action,
    };
    if (this.operationId) event.operationId = this.operationId;
    return event;
  }

  // Whether some sink takes this type; builders whose events always name the operation then write the whole
  // event as one literal (one allocation, no property-array growth), the common fields first.
  private wants(type: TraceEventType): boolean {
    const wanted = this.wanted;
    return wanted === null || wanted.has(type);
  }

  private send(event: Fields): void {
    this.tracer.dispatch(event as unknown as TraceEvent, this.callTypes);
  }

  // Redaction of one field that can hold caller data (key rules see the field's name, as for nested keys).
  // `plain`: the value is a copy `toRecordable` (or `recordable`) made, so it holds no symbol keys to look for.
  private scrub(key: string, value: unknown, plain = false): unknown {
    try {
      const redactor = this.tracer.redactor;
      return plain ? redactor.redactPlainField(key, value) : redactor.redactField(key, value);
    } catch {
      // A value that cannot even be read (a throwing getter, a revoked proxy) is not shown, and the run goes on.
      return '[redacted:unreadable]';
    }
  }

  private redactedTarget(target: string): string {
    if (target !== this.targetSeen) {
      this.targetRedacted = this.scrub('target', target) as string;
      this.targetSeen = target;
    }
    return this.targetRedacted;
  }

  // The read's `observed` field and the completion's `evidence` redact alike unless a key rule names either one.
  private redactedEvidence(evidence: Record<string, unknown>): unknown {
    if (evidence === this.evidenceSeen && fieldsAlike(this.tracer.redactor)) return this.evidenceRedacted;
    return this.scrub('evidence', evidence);
  }

  /** Whether no sink takes any further event of this call (each narrowed its types to none after `run.started`). */
  wantsNothing(): boolean {
    return this.wanted !== null && this.wanted.size === 0;
  }

  /** Whether some sink takes an event that carries the argument hash (`tool.selected`, or `observe`'s query). */
  hashesArguments(): boolean {
    return this.wants('tool.selected') || this.wants('observe');
  }

  /** Emits `run.started` with the call's facts (called by `Tracer.begin`). */
  started(mode: Mode, facts: CallFacts): void {
    this.ownCall = facts.entry === 'run';
    const e = this.open('run.started', this.startedAt);
    if (!e) return;
    e.entry = facts.entry;
    if (facts.turn !== undefined) e.turn = facts.turn;
    for (const key of CALLER_FACTS) if (facts[key] !== undefined) e[key] = this.scrub(key, facts[key]);
    // Whether the call id is the model's or one readback made up: only the model's is a tool call id to report.
    if (facts.toolCallId !== undefined) e.toolCallId = this.callId;
    e.mode = mode;
    this.send(e);
    const narrowed = this.tracer.typesAfterStart(e as unknown as TraceEvent);
    if (narrowed) {
      this.callTypes = narrowed.perSink;
      this.wanted = narrowed.wanted;
    }
  }

  /**
   * Records the validated (or rejected) arguments: hashed, raw only when opted in. `extra.argsHash` is the
   * SHA-256 of the input's canonical JSON when the caller already has that text (the fingerprint's).
   */
  selected(
    valid: boolean,
    input: unknown,
    extra: { issues?: string[]; target?: string; argsHash?: string | null } = {},
  ): void {
    const wanted = this.wants('tool.selected');
    if (wanted) this.selectedAt = this.tracer.clock.now();
    const e = wanted ? this.open('tool.selected', this.selectedAt) : undefined;
    const argsHash = extra.argsHash !== undefined ? extra.argsHash : e || valid ? hashOrNull(input) : null;
    if (valid) this.inputHash = argsHash;
    if (!e) return;
    e.tool = this.action;
    e.valid = valid;
    e.argsHash = argsHash;
    if (this.tracer.options.recordArguments) e.args = this.scrub('args', recordable(input), true);
    if (extra.issues !== undefined) e.issues = this.scrub('issues', extra.issues);
    if (extra.target !== undefined) e.target = this.redactedTarget(extra.target);
    this.send(e);
  }

  /** Records the authorization decision. */
  permission(policy: boolean, reason: string | undefined): void {
    // Without a policy nothing runs between the selection and this decision (the runner awaits only an
    // `authorize`): one step, one clock read.
    const e = this.open('permission.decided', policy ? undefined : this.selectedAt);
    if (!e) return;
    e.allowed = reason === undefined;
    e.policy = policy;
    if (reason !== undefined) e.reason = this.scrub('reason', reason);
    this.send(e);
  }

  /** Records how the operation record was found or made. */
  reserved(
    record: Pick<OperationRecord, 'id' | 'idempotencyKey' | 'fingerprint'> & { requestedAt?: number },
    reservation: OperationReservedEvent['reservation'],
  ): void {
    this.operationId = record.id;
    // The reservation and its `reserved` transition are one moment, the one a new record was requested at
    // (the time of its `reserved` store event): no clock read of its own.
    const made = reservation === 'created' && typeof record.requestedAt === 'number';
    const at = made ? this.tracer.isoOf(record.requestedAt as number) : this.tracer.isoNow();
    if (this.wants('operation.reserved')) {
      this.send({
        v: TRACE_FORMAT_VERSION,
        type: 'operation.reserved',
        seq: ++this.seq,
        at,
        runId: this.runId,
        callId: this.callId,
        action: this.action,
        operationId: record.id,
        idempotencyKey: record.idempotencyKey,
        fingerprint: record.fingerprint,
        reservation,
      });
    }
    if (reservation === 'created') this.moved(record.id, 'reserved', null, 'requested', null, 0, at);
  }

  /** Ties the call to an existing operation (poll, reconcile) without a reservation event. */
  attach(record: OperationRecord): void {
    this.operationId = record.id;
  }

  /** Records one store transition. */
  transition(event: string, from: Lifecycle, record: OperationRecord, atMs: number): void {
    if (!this.wants('state.transition')) return;
    // Stamped with the time of the store event the write appended (no clock read of its own), whatever the
    // store made of the record's `updatedAt`.
    const at = this.tracer.isoOf(atMs);
    this.moved(record.id, event, from, record.lifecycle, record.status, record.attempt, at);
  }

  private moved(
    operationId: string,
    event: string,
    from: Lifecycle | null,
    to: Lifecycle,
    status: Status | null,
    attempt: number,
    at: string,
  ): void {
    if (!this.wants('state.transition')) return;
    this.send({
      v: TRACE_FORMAT_VERSION,
      type: 'state.transition',
      seq: ++this.seq,
      at,
      runId: this.runId,
      callId: this.callId,
      action: this.action,
      operationId,
      event,
      from,
      to,
      status,
      attempt,
    });
  }

  /**
   * Emits `execute.started` and returns the step's start time, which `executeReturned` / `executeThrew` take:
   * the drive calls these around its own await, so tracing adds no promise to the step.
   */
  executeStarted(record: OperationRecord): number {
    // The event's time is the step's start: one clock read for both.
    const started = this.tracer.clock.now();
    if (this.wants('execute.started')) {
      this.send({
        v: TRACE_FORMAT_VERSION,
        type: 'execute.started',
        seq: ++this.seq,
        at: this.tracer.isoOf(started),
        runId: this.runId,
        callId: this.callId,
        action: this.action,
        operationId: record.id,
        idempotencyKey: record.idempotencyKey,
        attempt: record.attempt,
      });
    }
    return started;
  }

  /** Records a failed execute (threw, rejected or timed out): the claim is an error. */
  executeThrew(record: OperationRecord, started: number, error: unknown): void {
    const kind = error instanceof StepTimeout ? 'timed_out' : 'threw';
    this.finished(record, started, { claimed: 'error', normalized: { kind, reason: describeError(error) } });
  }

  /** Records what execute returned: the claim and the raw result, apart from any read. */
  executeReturned(record: OperationRecord, started: number, raw: unknown): void {
    const options = this.tracer.options;
    const rejected = isRejected(raw);
    const accepted = !rejected && isAccepted(raw);
    const claimed = rejected ? 'rejected' : accepted ? 'accepted' : claimOf(options.claimOf, raw);
    if (!this.wants('execute.finished')) {
      this.executeEndedAt = this.tracer.clock.now();
      this.claim = claimed;
      return;
    }
    const body = rejected || accepted ? ((raw as { raw?: unknown }).raw ?? null) : raw;
    const recorded = recordable(body);
    // With the raw result in the record its hash adds nothing; without it, the hash is what remains.
    const keepRaw = options.recordResults !== false;
    const normalized: Normalized = rejected
      ? { kind: 'rejected', code: (raw as Rejected).code, reason: (raw as Rejected).reason }
      : accepted
        ? { kind: 'accepted', ref: toRecordable((raw as Accepted).ref).value }
        : { kind: 'returned' };
    this.finished(record, started, {
      claimed,
      raw: keepRaw ? recorded : undefined,
      rawHash: keepRaw ? null : hashOrNull(recorded),
      normalized,
    });
  }

  private finished(record: OperationRecord, started: number, f: Finished): void {
    const ended = this.tracer.clock.now();
    this.executeEndedAt = ended;
    this.claim = f.claimed;
    if (!this.wants('execute.finished')) return;
    const e: Fields = {
      v: TRACE_FORMAT_VERSION,
      type: 'execute.finished',
      seq: ++this.seq,
      at: this.tracer.isoOf(ended),
      runId: this.runId,
      callId: this.callId,
      action: this.action,
      operationId: record.id,
      attempt: record.attempt,
      durationMs: ended - started,
      claimed: f.claimed,
    };
    if (f.raw !== undefined) e.raw = this.scrub('raw', f.raw, true);
    if (f.rawHash) e.rawHash = f.rawHash;
    // `returned` carries no caller data; the other kinds carry a code, a reason or a reference.
    e.normalized = f.normalized.kind === 'returned' ? f.normalized : this.scrub('normalized', f.normalized);
    this.send(e);
  }

  /** The start time of a read, which `observed` takes. */
  readStarted(): number {
    return this.tracer.clock.now();
  }

  /** Records one authoritative read that began at `started`: the query, the read time and what was seen. */
  observed(phase: ReadPhase, record: OperationRecord, started: number, reading: Reading): void {
    const e = this.readEvent(phase, record, started, reading.at);
    if (!e) return;
    e.result = reading.kind;
    if (reading.kind === 'observed') {
      if (reading.evaluation) {
        e.verdict = reading.evaluation.verdict;
        const { evidence, checks } = reading.evaluation;
        e.observed = this.scrub('observed', evidence);
        e.checks = this.scrub('checks', checks);
        this.checksSeen = checks;
        this.checksRedacted = e.checks;
        this.evidenceSeen = evidence;
        this.evidenceRedacted = e.observed;
      }
      if (reading.terminal) e.terminal = reading.terminal;
    } else if (reading.kind === 'error') {
      e.errorCode = this.scrub('errorCode', reading.code);
      e.reason = this.scrub('reason', reading.reason);
    }
    this.send(e);
  }

  /** Wraps the baseline read. */
  baseline<B extends Baseline>(record: OperationRecord, read: () => Promise<B>): Promise<B> {
    const started = this.tracer.clock.now();
    return settle(read).then((base) => {
      const e = this.readEvent('baseline', record, started, this.tracer.clock.now());
      if (!e) return base;
      e.result = !base.ok ? 'error' : base.value === null ? 'absent' : 'observed';
      if (!base.ok) {
        e.errorCode = this.scrub('errorCode', base.code);
        e.reason = this.scrub('reason', base.reason);
      }
      this.send(e);
      return base;
    });
  }

  /** Emits the completion, with the claim and the verified outcome as separate fields. */
  completed(c: Completion): void {
    const now = this.tracer.clock.now();
    this.operationId = c.operationId;
    if (!this.wants('completion')) return;
    const e: Fields = {
      v: TRACE_FORMAT_VERSION,
      type: 'completion',
      seq: ++this.seq,
      at: this.tracer.isoOf(now),
      runId: this.runId,
      callId: this.callId,
      action: this.action,
      operationId: c.operationId,
      status: c.status,
      idempotencyKey: c.idempotencyKey,
      attempt: c.attempt,
      message: this.scrub('message', c.message),
      nextAllowedAction: c.nextAllowedAction,
      safeToRepeat: c.safeToRepeat,
      claimed: this.claimOf(c),
      verified: c.status === 'verified',
      checks: c.checks === this.checksSeen ? this.checksRedacted : this.scrub('checks', c.checks),
      durationMs: now - this.startedAt,
    };
    if (c.errorCode) e.errorCode = this.scrub('errorCode', c.errorCode);
    if (c.reason) e.reason = this.scrub('reason', c.reason);
    if (c.observedAt) e.observedAt = c.observedAt;
    // The runner's own due time, like `observedAt`: no caller data, so not scanned.
    if (c.pollAfter !== undefined) e.pollAfter = c.pollAfter;
    if (c.evidence) e.evidence = this.redactedEvidence(c.evidence);
    if (c.units) e.units = this.scrub('units', c.units);
    if (this.executeEndedAt !== undefined) e.verificationMs = now - this.executeEndedAt;
    if (c.shadow) e.shadow = this.scrub('shadow', c.shadow);
    this.send(e);
  }

  // A shadow tool can run outside the drive (its record could not be reserved), unseen by the execute hooks;
  // the agent's own shadow call is never joined, so its verdict's claim is this call's (a poll's is not).
  private claimOf(c: Completion): ClaimedOutcome {
    return this.claim === 'none' && this.ownCall && c.shadow ? c.shadow.claimed : this.claim;
  }

  /** Emits `run.error` for a call that threw instead of completing. */
  failed(error: unknown): void {
    const e = this.open('run.error');
    if (!e) return;
    const err = error as { name?: unknown; code?: unknown };
    e.error = this.scrub('error', {
      name: typeof err?.name === 'string' ? err.name : 'Error',
      ...(typeof err?.code === 'string' ? { code: err.code } : {}),
      message: describeError(error),
    });
    this.send(e);
  }

  // Opens an `observe` event with the facts of one read: the query, the read time and how long it took. The
  // event happened when the read ended (`at`, read from the clock as the read returned), so it carries that time.
  private readEvent(phase: ReadPhase, record: OperationRecord, started: number, at: number) {
    if (!this.wants('observe')) return undefined;
    if (this.inputHash === undefined) this.inputHash = hashOrNull(record.input);
    const e: Fields = {
      v: TRACE_FORMAT_VERSION,
      type: 'observe',
      seq: ++this.seq,
      at: this.tracer.isoOf(at),
      runId: this.runId,
      callId: this.callId,
      action: this.action,
      operationId: record.id,
      phase,
      attempt: record.attempt,
      query: { target: this.redactedTarget(record.target), inputHash: this.inputHash },
      readAt: this.tracer.isoOf(at),
      durationMs: at - started,
      result: undefined,
    };
    return e;
  }
}

// Per redactor: whether it redacts the fields `observed` and `evidence` alike, that is, neither name is a secret
// key to it. An object no rule can produce comes back as it is exactly under a name that is not a secret key.
const alike = new WeakMap<Redactor, boolean>();
const PROBE = Object.freeze({});
function fieldsAlike(redactor: Redactor): boolean {
  let known = alike.get(redactor);
  if (known === undefined) {
    known = ['observed', 'evidence'].every((key) => redactor.redactField(key, PROBE) === PROBE);
    alike.set(redactor, known);
  }
  return known;
}

// Calls a step and returns its promise; a step that throws synchronously rejects, as it would in an async function.
/** Calls `step` and returns its promise; a synchronous throw becomes a rejection, as an async step's would. */
export function settle<T>(step: () => Promise<T>): Promise<T> {
  try {
    return Promise.resolve(step());
  } catch (error) {
    return Promise.reject(error);
  }
}

// The value as `toRecordable` copies it. A flat record of JSON scalars (most tool results) is copied here: the
// general copy (a cycle set, an array of entry pairs) cost more than the rest of the raw field's record.
function recordable(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return toRecordable(value).value;
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  try {
    // A proxy's traps may throw here as anywhere: `toRecordable` then records what it can.
    if (Object.getPrototypeOf(source) !== Object.prototype) return toRecordable(value).value;
    const keys = Object.keys(source);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      const item = source[key];
      // Anything `toPlain` would convert, drop or refuse (undefined, NaN, nested data) takes its way.
      if (key === '__proto__' || !isScalar(item)) return toRecordable(value).value;
      out[key] = item;
    }
  } catch {
    return toRecordable(value).value;
  }
  return out;
}

function isScalar(value: unknown): boolean {
  return (
    value === null ||
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  );
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
    return classifyClaim(raw, custom);
  } catch {
    // A body whose fields cannot even be read claims nothing against the call's success.
    return 'success';
  }
}
