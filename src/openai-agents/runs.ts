/**
 * What readback remembers about one Agents SDK run: its readback run id and the completions its tool
 * calls produced. Keyed by the SDK's `RunContext` object, which the SDK hands both to every tool call
 * and to every output guardrail of a run, so tools and guardrail meet without any shared user state.
 * A WeakMap, so a finished run's entry is collected with its context.
 */
import { randomUUID } from 'node:crypto';
import type { Completion } from '../contract/types.js';

/** The completions of one Agents SDK run, in the order the model was shown them. */
export interface RunLedger {
  /** The default readback run id for this SDK run. */
  readonly runId: string;
  /** By operation id: a repeated call that joined an operation does not count twice. */
  readonly completions: Map<string, Completion>;
  /** By the SDK's tool call id, so the tool output item can carry its completion. */
  readonly byCall: Map<string, Completion>;
}

const ledgers = new WeakMap<object, RunLedger>();

/** The ledger of the run that owns this context, created on first use. */
export function ledgerOf(runContext: object): RunLedger {
  let ledger = ledgers.get(runContext);
  if (!ledger) {
    ledger = { runId: `oa:${randomUUID()}`, completions: new Map(), byCall: new Map() };
    ledgers.set(runContext, ledger);
  }
  return ledger;
}

/** The ledger of this context if a readback tool ran in it; never creates one. */
export function existingLedger(runContext: object): RunLedger | undefined {
  return ledgers.get(runContext);
}
