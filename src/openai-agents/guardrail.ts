/**
 * The final-answer check as an Agents SDK output guardrail. It is a plain `{ name, execute }`
 * object on purpose: the SDK passes every agent and runner output guardrail through
 * `defineOutputGuardrail` itself, so an already defined guardrail (which has no `execute`) fails at
 * run time with "execute is not a function".
 */
import type { OutputGuardrail } from '@openai/agents';
import type { Completion, Status } from '../contract/types.js';
import { isCompletion } from '../integrations/text.js';
import { type GuardResult, guardAnswer } from '../messages/guard.js';
import { summarize } from '../messages/summarize.js';
import type { Runner } from '../runner/runner.js';
import { existingLedger } from './runs.js';

/** What the guardrail reports (`outputInfo`), whether or not it trips. */
export interface CompletionGuardrailInfo extends GuardResult {
  /** The completions the answer was checked against, each at its latest state in the runner's store. */
  completions: { operationId: string; action: string; target: string; status: Status }[];
  /** An honest answer formed from those completions (`summarize`); it always passes the guard. */
  honestAnswer: string;
}

/** Options for `completionGuardrail`. */
export interface CompletionGuardrailOptions {
  /** Guardrail name in the SDK's results and traces; default `readback_completion`. */
  name?: string;
}

/** The SDK's output guardrail shape, for any agent output type and context. */
// biome-ignore lint/suspicious/noExplicitAny: it must fit an agent of any output type and context.
export type CompletionGuardrail = OutputGuardrail<any, any>;

// The suffix `completionText` ends with; lets a resumed run (a new RunContext) find its operations.
const OPERATION_SUFFIX = /\(operation ([^\s()]+)\)\s*$/;

function textsOf(output: unknown): string[] {
  if (typeof output === 'string') return [output];
  if (Array.isArray(output)) return output.flatMap(textsOf);
  if (
    typeof output === 'object' &&
    output !== null &&
    typeof (output as { text?: unknown }).text === 'string'
  ) {
    return [(output as { text: string }).text];
  }
  return [];
}

/** Operation ids named by readback tool outputs among the run's items (what the model was shown). */
function operationIdsIn(items: readonly unknown[] | undefined): string[] {
  const ids: string[] = [];
  for (const item of items ?? []) {
    if (typeof item !== 'object' || item === null) continue;
    const raw = item as { type?: unknown; output?: unknown };
    if (raw.type !== 'function_call_result') continue;
    for (const text of textsOf(raw.output)) {
      const id = OPERATION_SUFFIX.exec(text)?.[1];
      if (id) ids.push(id);
    }
  }
  return ids;
}

/** The final answer as text: the string itself, or every string inside a structured output. */
export function answerText(output: unknown): string {
  if (typeof output === 'string') return output;
  const parts: string[] = [];
  const walk = (value: unknown) => {
    if (typeof value === 'string') parts.push(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (typeof value === 'object' && value !== null) Object.values(value).forEach(walk);
  };
  walk(output);
  return parts.join('\n');
}

/**
 * The run's completions: those its readback tools recorded, plus any operation a tool output in the
 * run names (a run resumed from a saved state has a new context), each replaced by the latest state
 * the runner's store holds, since a pending operation may have settled since the model saw it.
 */
async function runCompletions(
  runner: Runner,
  args: { context: object; details?: { output?: readonly unknown[] } | undefined },
) {
  const recorded = existingLedger(args.context)?.completions ?? new Map<string, Completion>();
  const ids = new Set([...recorded.keys(), ...operationIdsIn(args.details?.output)]);
  const out: Completion[] = [];
  for (const id of ids) {
    // A store that cannot answer leaves the completion the model was shown, which is still evidence.
    const stored = (await runner.store.get(id).catch(() => null))?.completion;
    const latest = isCompletion(stored) ? stored : recorded.get(id);
    if (latest) out.push(latest);
  }
  return out;
}

/**
 * An output guardrail that trips when the final answer claims an effect the run's completions do
 * not verify, or an action that never ran (`guardAnswer`, deterministic, no model). Its `outputInfo`
 * carries the violations and an honest answer to show instead. Put it in an `Agent`'s
 * `outputGuardrails` (or a `Runner`'s); catch `OutputGuardrailTripwireTriggered` around `run`.
 */
export function completionGuardrail(
  runner: Runner,
  options: CompletionGuardrailOptions = {},
): CompletionGuardrail {
  return {
    name: options.name ?? 'readback_completion',
    async execute(args) {
      const completions = await runCompletions(runner, args);
      const verdict = guardAnswer(answerText(args.agentOutput), completions);
      const outputInfo: CompletionGuardrailInfo = {
        ...verdict,
        completions: completions.map((c) => ({
          operationId: c.operationId,
          action: c.action,
          target: c.target,
          status: c.status,
        })),
        honestAnswer: summarize(completions),
      };
      return { tripwireTriggered: !verdict.ok, outputInfo };
    },
  };
}
