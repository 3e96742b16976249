/**
 * Reads one run's operations from a readback store into an incident. The store holds what the runner
 * knew (input, the raw result in the event log, the completion it returned); what the user asked and
 * what the agent finally said are not in it, so the caller supplies them.
 */
import type { OperationEvent, OperationRecord, OperationStore } from '../store/types.js';
import type { Incident, IncidentCall, IncidentResult, Location } from './model.js';

/** What `incidentFromStore` needs besides the store. */
export interface StoreIncidentOptions {
  runId: string;
  /** Names the input in the review ("store .readback/demo.db"). */
  source: string;
  request?: string;
  answer?: string;
}

// Events of one operation are numbered within it; operations are spaced so their events never interleave.
const OPERATION_SPAN = 1_000_000;

function at(callIndex: number, record: OperationRecord, event: OperationEvent | undefined): Location {
  return {
    order: (callIndex + 1) * OPERATION_SPAN + (event?.seq ?? 0),
    operationId: record.id,
    ...(event !== undefined ? { seq: event.seq } : {}),
  };
}

function resultOf(
  index: number,
  record: OperationRecord,
  events: OperationEvent[],
): IncidentResult | undefined {
  // The runner records the raw result (or the error) on the event written right after execute; a retry
  // writes a newer one, and the latest attempt is the one whose completion the agent got.
  const last = events.findLast((e) => e.detail !== undefined && ('raw' in e.detail || 'error' in e.detail));
  if (last === undefined) return undefined;
  const detail = last.detail!;
  const error = 'raw' in detail ? undefined : String(detail.error);
  return {
    raw: detail.raw ?? null,
    ...(error !== undefined ? { error } : {}),
    // The runner hands its completion to the agent: that status is the word the agent was given.
    ...(record.completion !== null ? { claimed: record.completion.status } : {}),
    at: at(index, record, last),
  };
}

function callOf(index: number, record: OperationRecord, events: OperationEvent[]): IncidentCall {
  const input = record.input;
  const call: IncidentCall = {
    id: record.id,
    name: record.action,
    args:
      typeof input === 'object' && input !== null && !Array.isArray(input)
        ? (input as Record<string, unknown>)
        : { input },
    target: record.target,
    at: at(index, record, events[0]),
  };
  const result = resultOf(index, record, events);
  if (result !== undefined) call.result = result;
  const c = record.completion;
  if (c !== null) {
    const decided = events.findLast((e) => e.status === c.status) ?? events.at(-1);
    call.safeToRepeat = c.safeToRepeat;
    call.readback = {
      status: c.status,
      operationId: c.operationId,
      checks: c.checks ?? [],
      safeToRepeat: c.safeToRepeat,
      message: c.message,
      ...(c.errorCode !== undefined ? { errorCode: c.errorCode } : {}),
      ...(c.reason !== undefined ? { reason: c.reason } : {}),
      ...(c.evidence !== undefined ? { observed: c.evidence } : {}),
      at: at(index, record, decided),
    };
  }
  return call;
}

/** Builds the incident of one run from a store; resolves to null when the store has no operation for that run. */
export async function incidentFromStore(
  store: OperationStore,
  options: StoreIncidentOptions,
): Promise<Incident | null> {
  const records = await store.list({ runId: options.runId });
  if (records.length === 0) return null;
  records.sort((a, b) => a.requestedAt - b.requestedAt || a.id.localeCompare(b.id));
  const calls: IncidentCall[] = [];
  for (const [i, record] of records.entries()) calls.push(callOf(i, record, await store.events(record.id)));
  const incident: Incident = { source: `${options.source} run ${options.runId}`, format: 'store', calls };
  if (options.request !== undefined)
    incident.request = { text: options.request, at: { order: 0, part: '--request' } };
  if (options.answer !== undefined) {
    incident.answer = {
      text: options.answer,
      at: { order: (records.length + 1) * OPERATION_SPAN, part: 'the final answer (--answer)' },
    };
  }
  return incident;
}
