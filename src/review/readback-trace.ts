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

class CallIndex {
  readonly calls: IncidentCall[] = [];
  private readonly byCall = new Map<string, IncidentCall>();
  private readonly byOperation = new Map<string, IncidentCall>();

  /** The call an event belongs to: by operation first, so a poll's events land on the call that started it. */
  find(e: Rec, at: Location): IncidentCall {
    const op = typeof e.operationId === 'string' ? e.operationId : undefined;
    const callId = String(e.callId);
    const runId = typeof e.runId === 'string' ? e.runId : undefined;
    // Call ids are only unique within a run (a model's tool-call ids, or a framework's "call_0"), and one
    // service-wide sink interleaves many runs: two runs' "call_0" are two calls.
    const key = JSON.stringify([runId ?? null, callId]);
    let call = (op !== undefined ? this.byOperation.get(op) : undefined) ?? this.byCall.get(key);
    if (call === undefined) {
      const action = String(e.action);
      call = { id: callId, name: action, args: {}, target: action, ...(runId ? { runId } : {}), at };
      this.calls.push(call);
    }
    this.byCall.set(key, call);
    if (op !== undefined) this.byOperation.set(op, call);
    return call;
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
        message: 'each line must be a trace event object with a string "type"',
      });
      return;
    }
    const bad = problem(e);
    if (bad !== undefined) {
      issues.push({ line, ...bad });
      return;
    }
    const at: Location = {
      order: line,
      line,
      ...(typeof e.operationId === 'string' ? { operationId: e.operationId } : {}),
      ...(typeof e.seq === 'number' ? { seq: e.seq } : {}),
    };
    if (e.type === 'tool.selected') selected(index.find(e, at), e as unknown as ToolSelectedEvent);
    else if (e.type === 'execute.finished')
      executed(index.find(e, at), e as unknown as ExecuteFinishedEvent, at);
    else if (e.type === 'completion') completed(index.find(e, at), e as unknown as CompletionEvent, at);
  });
  if (issues.length > 0) return { ok: false, issues };
  return { ok: true, value: { source: withTornLine(source, torn), format: 'trace', calls: index.calls } };
}
