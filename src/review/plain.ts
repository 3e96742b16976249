/**
 * Reads the plain JSONL incident format (docs/review-trace-format.md): one JSON object per line, each
 * with a `kind` of `request`, `tool_call`, `tool_result`, `verification` or `final_answer`. Any agent
 * framework can write it; every problem is reported with its line number and field, all at once.
 */
import { type Check, STATUSES, type Status } from '../contract/types.js';
import type { InputIssue, ReadOutcome } from './issues.js';
import {
  deriveTarget,
  type Incident,
  type IncidentCall,
  type Location,
  tornLastLine,
  withTornLine,
} from './model.js';

/** The record kinds the plain format knows. */
export const PLAIN_KINDS = ['request', 'tool_call', 'tool_result', 'verification', 'final_answer'] as const;

type Rec = Record<string, unknown>;

class LineReader {
  readonly issues: InputIssue[] = [];
  constructor(
    readonly line: number,
    readonly rec: Rec,
  ) {}

  fail(field: string | undefined, message: string): undefined {
    this.issues.push({ line: this.line, ...(field !== undefined ? { field } : {}), message });
    return undefined;
  }

  text(field: string, required: boolean): string | undefined {
    const value = this.rec[field];
    if (value === undefined) return required ? this.fail(field, 'is required') : undefined;
    if (typeof value !== 'string') return this.fail(field, `must be a string, got ${typeName(value)}`);
    if (required && value.trim() === '') return this.fail(field, 'must not be empty');
    return value;
  }

  repeatSafety(field: string): boolean | 'unknown' | undefined {
    const value = this.rec[field];
    if (value === undefined || typeof value === 'boolean' || value === 'unknown') return value;
    return this.fail(field, `must be true, false or "unknown", got ${JSON.stringify(value)}`);
  }
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

function checksOf(r: LineReader): Check[] {
  const value = r.rec.checks;
  if (value === undefined) return [];
  if (!Array.isArray(value)) return r.fail('checks', `must be an array, got ${typeName(value)}`) ?? [];
  const checks: Check[] = [];
  value.forEach((c, i) => {
    if (
      typeof c !== 'object' ||
      c === null ||
      typeof (c as Rec).name !== 'string' ||
      typeof (c as Rec).pass !== 'boolean'
    ) {
      r.fail(`checks[${i}]`, 'must be an object with a string "name" and a boolean "pass"');
      return;
    }
    checks.push(c as Check);
  });
  return checks;
}

/** Parses a plain JSONL incident trace; `source` names it in the review. */
export function parsePlainTrace(text: string, source: string): ReadOutcome<Incident> {
  const issues: InputIssue[] = [];
  const torn = tornLastLine(text);
  const incident: Incident = { source: withTornLine(source, torn), format: 'plain', calls: [] };
  const calls = new Map<string, IncidentCall>();
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '' || line === torn) return;
    let rec: unknown;
    try {
      rec = JSON.parse(raw);
    } catch (error) {
      issues.push({ line, message: `is not valid JSON (${(error as Error).message})` });
      return;
    }
    if (typeof rec !== 'object' || rec === null || Array.isArray(rec)) {
      issues.push({ line, message: `must be a JSON object, got ${typeName(rec)}` });
      return;
    }
    const r = new LineReader(line, rec as Rec);
    readRecord(r, incident, calls, { order: line, line });
    issues.push(...r.issues);
  });
  if (
    incident.request === undefined &&
    incident.calls.length === 0 &&
    incident.answer === undefined &&
    issues.length === 0
  ) {
    issues.push({ message: 'the trace has no records' });
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, value: incident };
}

function readRecord(r: LineReader, incident: Incident, calls: Map<string, IncidentCall>, at: Location): void {
  const kind = r.rec.kind;
  if (typeof kind !== 'string' || !(PLAIN_KINDS as readonly string[]).includes(kind)) {
    r.fail(
      'kind',
      kind === undefined && typeof r.rec.type === 'string'
        ? // A readback event among plain records (two writers sharing a file): say so, not just "kind".
          `is required: this is a readback trace event (type ${JSON.stringify(r.rec.type)}), and one file cannot mix the two formats`
        : kind === undefined
          ? `is required (one of ${PLAIN_KINDS.join(', ')})`
          : `must be one of ${PLAIN_KINDS.join(', ')}, got ${JSON.stringify(kind)}`,
    );
    return;
  }
  switch (kind) {
    case 'request': {
      const text = r.text('text', true);
      if (incident.request !== undefined)
        r.fail(undefined, `a second request (the first is on line ${incident.request.at.line})`);
      else if (text !== undefined) incident.request = { text, at };
      return;
    }
    case 'final_answer': {
      const text = r.text('text', true);
      if (incident.answer !== undefined)
        r.fail(undefined, `a second final_answer (the first is on line ${incident.answer.at.line})`);
      else if (text !== undefined) incident.answer = { text, at };
      return;
    }
    case 'tool_call':
      readCall(r, incident, calls, at);
      return;
    case 'tool_result':
      readResult(r, calls, at);
      return;
    case 'verification':
      readVerification(r, calls, at);
      return;
  }
}

function readCall(r: LineReader, incident: Incident, calls: Map<string, IncidentCall>, at: Location): void {
  const id = r.text('id', true);
  const name = r.text('name', true);
  const target = r.text('target', false);
  const safeToRepeat = r.repeatSafety('safeToRepeat');
  let args: Rec = {};
  const rawArgs = r.rec.args;
  if (rawArgs !== undefined) {
    if (typeof rawArgs !== 'object' || rawArgs === null || Array.isArray(rawArgs))
      r.fail('args', `must be an object, got ${typeName(rawArgs)}`);
    else args = rawArgs as Rec;
  }
  if (id === undefined || name === undefined) return;
  if (calls.has(id)) {
    r.fail('id', `"${id}" is already used by the tool_call on line ${calls.get(id)!.at.line}`);
    return;
  }
  const call: IncidentCall = {
    id,
    name,
    args,
    target: target ?? deriveTarget(name, args),
    ...(safeToRepeat !== undefined ? { safeToRepeat } : {}),
    at,
  };
  calls.set(id, call);
  incident.calls.push(call);
}

function callFor(r: LineReader, calls: Map<string, IncidentCall>): IncidentCall | undefined {
  const id = r.text('call', true);
  if (id === undefined) return undefined;
  const call = calls.get(id);
  return call ?? r.fail('call', `"${id}" names no earlier tool_call`);
}

function readResult(r: LineReader, calls: Map<string, IncidentCall>, at: Location): void {
  const call = callFor(r, calls);
  const error = r.text('error', false);
  const claimed = r.text('claimed', false);
  if (!Object.hasOwn(r.rec, 'result') && error === undefined) {
    r.fail('result', 'is required unless "error" says the call raised (use null for an empty result)');
  }
  if (call === undefined || r.issues.length > 0) return;
  if (call.result !== undefined) {
    r.fail('call', `"${call.id}" already has a tool_result on line ${call.result.at.line}`);
    return;
  }
  call.result = {
    raw: r.rec.result ?? null,
    ...(error !== undefined ? { error } : {}),
    ...(claimed !== undefined ? { claimed } : {}),
    at,
  };
}

function readVerification(r: LineReader, calls: Map<string, IncidentCall>, at: Location): void {
  const call = callFor(r, calls);
  const status = r.rec.status;
  if (typeof status !== 'string' || !(STATUSES as readonly string[]).includes(status)) {
    r.fail('status', `must be one of ${STATUSES.join(', ')}, got ${JSON.stringify(status)}`);
  }
  const operationId = r.text('operationId', false);
  const errorCode = r.text('errorCode', false);
  const reason = r.text('reason', false);
  const message = r.text('message', false);
  const safeToRepeat = r.repeatSafety('safeToRepeat');
  const checks = checksOf(r);
  if (call === undefined || r.issues.length > 0) return;
  if (call.readback !== undefined) {
    r.fail('call', `"${call.id}" already has a verification on line ${call.readback.at.line}`);
    return;
  }
  call.readback = {
    status: status as Status,
    checks,
    ...(operationId !== undefined ? { operationId } : {}),
    ...(errorCode !== undefined ? { errorCode } : {}),
    ...(reason !== undefined ? { reason } : {}),
    ...(r.rec.observed !== undefined ? { observed: r.rec.observed } : {}),
    ...(safeToRepeat !== undefined ? { safeToRepeat } : {}),
    ...(message !== undefined ? { message } : {}),
    at,
  };
}
