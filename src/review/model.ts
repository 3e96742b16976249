/**
 * The one in-memory shape of an incident that every input is turned into before it is reviewed:
 * the user's request, each tool call with its raw result and the outcome the adapter claimed,
 * the read-back evidence for that call, and the final answer. The analysis never sees a file format.
 */
import type { Check, RepeatSafety, Status } from '../contract/types.js';

/** Where a piece of the incident came from, precise enough to open the file or event log at it. */
export interface Location {
  /** Chain order: smaller comes first; adapters number every step as they read it. */
  order: number;
  /** 1-based line of a JSONL trace. */
  line?: number;
  /** The store operation the step belongs to. */
  operationId?: string;
  /** The event's position in that operation's log. */
  seq?: number;
  /** A part of the input without lines or events (`--answer`, a fixture field). */
  part?: string;
}

/** What the user asked for. */
export interface IncidentRequest {
  text: string;
  at: Location;
}

/** What the tool returned, and the word the adapter passed on to the model about it. */
export interface IncidentResult {
  /** The tool's raw return value (a body, an HTTP-ish object, a string); null when it returned nothing. */
  raw: unknown;
  /** Set when the call threw or timed out instead of returning: a transport error. */
  error?: string;
  /** The outcome the adapter reported to the model ("success", "queued", a sentence); absent when it passed `raw` on. */
  claimed?: string;
  at: Location;
}

/** An authoritative read of the state a call was meant to change (readback's completion, or a reviewer's). */
export interface IncidentReadback {
  status: Status;
  operationId?: string;
  errorCode?: string;
  reason?: string;
  observed?: unknown;
  checks: Check[];
  safeToRepeat?: RepeatSafety;
  /** The text formed for this status, when a formatter or UI rendered one. */
  message?: string;
  at: Location;
}

/** One state-changing tool call, with what came back and what was read back. */
export interface IncidentCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
  /** `kind:id` of what the call acts on; derived from the args when the input does not say. */
  target: string;
  safeToRepeat?: RepeatSafety;
  /** The agent run the call belongs to, when the input can hold several (readback's own trace). */
  runId?: string;
  at: Location;
  result?: IncidentResult;
  readback?: IncidentReadback;
}

/** The text the agent finally told the user. */
export interface IncidentAnswer {
  text: string;
  at: Location;
}

/** An incident in the normalized form the review works on. */
export interface Incident {
  /** A short name of the input ("trace.jsonl", "store .readback/demo.db run r-1"). */
  source: string;
  /** How the input was read: `plain`, `store`, `fixture`, `trace`. */
  format: string;
  request?: IncidentRequest;
  calls: IncidentCall[];
  answer?: IncidentAnswer;
}

/**
 * The number of a JSONL text's last line when a crash cut it off mid-write (no newline after it, and not
 * valid JSON), or undefined. A trace of the incident under review often ends that way; the lines before it
 * are whole, and the review reads them.
 */
export function tornLastLine(text: string): number | undefined {
  if (text.endsWith('\n')) return undefined;
  const start = text.lastIndexOf('\n') + 1;
  const last = text.slice(start);
  if (last.trim() === '') return undefined;
  try {
    JSON.parse(last);
    return undefined;
  } catch {
    return text.slice(0, start).split('\n').length;
  }
}

/** The source name of an incident whose last line was cut off mid-write. */
export function withTornLine(source: string, line: number | undefined): string {
  return line === undefined ? source : `${source} (line ${line} cut off mid-write: skipped)`;
}

/** A location as a reader would look for it: "line 4", "op-01 event 3", "--answer sentence 2". */
export function describeLocation(at: Location): string {
  const parts: string[] = [];
  if (at.line !== undefined) parts.push(`line ${at.line}`);
  if (at.operationId !== undefined) {
    parts.push(
      at.seq !== undefined ? `operation ${at.operationId} event ${at.seq}` : `operation ${at.operationId}`,
    );
  }
  if (at.part !== undefined) parts.push(at.part);
  return parts.length > 0 ? parts.join(', ') : 'input';
}

const ID_KEYS = ['id', 'target', 'orderId', 'ticketId', 'to', 'email', 'recipient', 'key', 'name', 'path'];

/** The target a call acts on when the input does not name one: `name:value` of its most id-like argument. */
export function deriveTarget(name: string, args: Record<string, unknown>): string {
  for (const key of ID_KEYS) {
    const value = args[key];
    if (typeof value === 'string' || typeof value === 'number') return `${name}:${value}`;
  }
  const first = Object.values(args).find((v) => typeof v === 'string' || typeof v === 'number');
  return first === undefined ? name : `${name}:${first}`;
}
