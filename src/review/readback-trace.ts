/**
 * Reads readback's own run trace (`src/trace`: JSONL events discriminated by `type`) into an incident.
 * Each tool call becomes a call; later polls and reconciler passes of the same operation update its
 * read-back. The runner hands its completion to the agent, so the completion's status is the word the
 * agent was given. The trace holds neither the user's request nor the final answer: the CLI supplies them.
 */
import { STATUSES } from '../contract/types.js';
import type { CompletionEvent, ExecuteFinishedEvent, ToolSelectedEvent } from '../trace/events.js';
import type { InputIssue, ReadOutcome } from './issues.js';
import { type Incident, type IncidentCall, type Location, tornLastLine, withTornLine } from './model.js';

/** The trace format version this adapter reads. */
export const READABLE_TRACE_VERSION = 1;

type Rec = Record<string, unknown>;

function isRecord(value: unknown): value is Rec {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** What the index knows of one (run, call id) pair: the call its events go to now, and the last seq read. */
interface Thread {
  call?: IncidentCall;
  lastSeq: number;
  /** Whether its calls begin with `run.started` (a sink can leave that type out). */
  started: boolean;
  lastLine: number;
}

class CallIndex {
  readonly calls: IncidentCall[] = [];
  private readonly threads = new Map<string, Thread>();
  private readonly byOperation = new Map<string, IncidentCall>();
  private readonly operationOf = new Map<IncidentCall, string>();

  private thread(e: Rec): Thread {
    // Call ids are only unique within a run (a model's tool-call ids, or a framework's "call_0"), and one
    // service-wide sink interleaves many runs: two runs' "call_0" are two calls.
    const key = JSON.stringify([typeof e.runId === 'string' ? e.runId : null, e.callId]);
    let t = this.threads.get(key);
    if (t === undefined) {
      t = { lastSeq: 0, started: false, lastLine: 0 };
      this.threads.set(key, t);
    }
    return t;
  }

  /**
   * Follows every event through its call id, so a call that reuses an earlier call's id (a framework that
   * numbers tool calls per turn) gets its own call; an issue when such calls interleave and cannot be told apart.
   */
  follow(e: Rec, line: number): InputIssue | undefined {
    const t = this.thread(e);
    const op = typeof e.operationId === 'string' ? e.operationId : undefined;
    const seq = typeof e.seq === 'number' ? e.seq : undefined;
    if (e.type === 'run.started') {
      // A poll's or reconcile's run.started names the operation whose call it goes on with.
      t.call = op !== undefined ? this.byOperation.get(op) : undefined;
      t.started = true;
    } else if (op === undefined) {
      // Each call numbers its events from 1: a seq that does not go up is another call's event.
      if (seq !== undefined && seq <= t.lastSeq) {
        if (t.started) {
          return {
            line,
            field: 'seq',
            message: `${seq} after ${t.lastSeq} (line ${t.lastLine}) for call id ${JSON.stringify(e.callId)}: calls that share an id interleave or are out of order, and their events cannot be told apart (give each tool call its own toolCallId)`,
          };
        }
        t.call = undefined;
      }
    } else if (
      t.call !== undefined &&
      !this.operationOf.has(t.call) &&
      // A call owns the operation it reserves (a retry's record may be an earlier call's); in a trace that
      // leaves run.started out, the first event naming an operation is the best sign there is.
      (e.type === 'operation.reserved' || !t.started)
    ) {
      this.bind(t.call, op);
    } else if (t.call === undefined || this.operationOf.get(t.call) !== op) {
      // The events of an operation another call reserved (a poll's, or a concurrent call's under one id) go to
      // that call; an operation no call has yet starts one.
      const owner = this.byOperation.get(op);
      t.call = owner ?? (t.call !== undefined && this.operationOf.has(t.call) ? undefined : t.call);
    }
    if (seq !== undefined) t.lastSeq = seq;
    t.lastLine = line;
    return undefined;
  }

  /** The call of an event `follow` has seen, opened by its first event that carries call data. */
  find(e: Rec, at: Location): IncidentCall {
    const t = this.thread(e);
    const op = typeof e.operationId === 'string' ? e.operationId : undefined;
    if (t.call === undefined) {
      const action = String(e.action);
      const runId = typeof e.runId === 'string' ? e.runId : undefined;
      t.call = {
        id: String(e.callId),
        name: action,
        args: {},
        target: action,
        ...(runId ? { runId } : {}),
        at,
      };
      this.calls.push(t.call);
    }
    if (op !== undefined && !this.operationOf.has(t.call)) this.bind(t.call, op);
    return t.call;
  }

  private bind(call: IncidentCall, op: string): void {
    this.operationOf.set(call, op);
    this.byOperation.set(op, call);
  }
}

function selected(call: IncidentCall, e: ToolSelectedEvent): void {
  call.name = e.tool;
  if (isRecord(e.args)) call.args = e.args;
  if (typeof e.target === 'string') call.target = e.target;
}

function executed(call: IncidentCall, e: ExecuteFinishedEvent, at: Location): void {
  const kind = e.normalized?.kind;
  const threw = kind === 'threw' || kind === 'timed_out';
  call.result = {
    raw: e.raw ?? null,
    ...(threw ? { error: e.normalized.reason ?? kind } : {}),
    ...(call.result?.claimed !== undefined ? { claimed: call.result.claimed } : {}),
    at,
  };
}

function completed(call: IncidentCall, e: CompletionEvent, at: Location): void {
  call.safeToRepeat = e.safeToRepeat;
  call.readback = {
    status: e.status,
    operationId: e.operationId,
    checks: Array.isArray(e.checks) ? e.checks : [],
    safeToRepeat: e.safeToRepeat,
    ...(typeof e.message === 'string' ? { message: e.message } : {}),
    ...(e.errorCode !== undefined ? { errorCode: e.errorCode } : {}),
    ...(e.reason !== undefined ? { reason: e.reason } : {}),
    ...(e.evidence !== undefined ? { observed: e.evidence } : {}),
    at,
  };
  // What the agent was handed: readback's status, or in shadow mode the live tool's own claim (its result went
  // to the agent unchanged, and readback's status only to operators).
  if (call.result !== undefined) call.result.claimed = e.shadow ? e.shadow.claimed : e.status;
}

function problem(e: Rec): InputIssue | undefined {
  if (e.v !== READABLE_TRACE_VERSION)
    return { field: 'v', message: `must be ${READABLE_TRACE_VERSION}, got ${JSON.stringify(e.v)}` };
  for (const field of ['callId', 'action']) {
    if (typeof e[field] !== 'string') return { field, message: 'is required (a string)' };
  }
  if (e.type === 'completion' && !(STATUSES as readonly unknown[]).includes(e.status)) {
    return {
      field: 'status',
      message: `must be one of ${STATUSES.join(', ')}, got ${JSON.stringify(e.status)}`,
    };
  }
  return undefined;
}

/** The runs a readback trace's calls belong to, in order of first appearance. */
export function runsOf(incident: Incident): string[] {
  return [...new Set(incident.calls.flatMap((c) => (c.runId !== undefined ? [c.runId] : [])))];
}

/** The incident of one run of a readback trace: its calls only; undefined when the trace holds none of it. */
export function selectRun(incident: Incident, runId: string): Incident | undefined {
  const calls = incident.calls.filter((c) => c.runId === runId);
  return calls.length === 0 ? undefined : { ...incident, source: `${incident.source} run ${runId}`, calls };
}

/** Parses a readback trace (JSONL of `TraceEvent`s); events of types it does not use are skipped. */
export function parseReadbackTrace(text: string, source: string): ReadOutcome<Incident> {
  const issues: InputIssue[] = [];
  const index = new CallIndex();
  const torn = tornLastLine(text);
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === '' || line === torn) return;
    let e: unknown;
    try {
      e = JSON.parse(raw);
    } catch (error) {
      issues.push({ line, message: `is not valid JSON (${(error as Error).message})` });
      return;
    }
    if (!isRecord(e) || typeof e.type !== 'string') {
      issues.push({
        line,
        field: 'type',
        message:
          isRecord(e) && typeof e.kind === 'string'
            ? `is required: this is a plain review record (kind ${JSON.stringify(e.kind)}), and one file cannot mix the two formats`
            : 'each line must be a trace event object with a string "type"',
      });
      return;
    }
    const bad = problem(e);
    if (bad !== undefined) {
      issues.push({ line, ...bad });
      return;
    }
    // No `seq`: an event's seq counts within its call, while a location's counts within the operation's log
    // (`readback ops`), where "event 12" of a three-event operation would point at nothing.
    const at: Location = {
      order: line,
      line,
      ...(typeof e.operationId === 'string' ? { operationId: e.operationId } : {}),
    };
    const interleaved = index.follow(e, line);
    if (interleaved !== undefined) {
      issues.push(interleaved);
      return;
    }
    if (e.type === 'tool.selected') selected(index.find(e, at), e as unknown as ToolSelectedEvent);
    else if (e.type === 'execute.finished')
      executed(index.find(e, at), e as unknown as ExecuteFinishedEvent, at);
    else if (e.type === 'completion') completed(index.find(e, at), e as unknown as CompletionEvent, at);
  });
  if (issues.length > 0) return { ok: false, issues };
  return { ok: true, value: { source: withTornLine(source, torn), format: 'trace', calls: index.calls } };
}
