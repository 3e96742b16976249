/**
 * readback/openai-agents: readback actions as tools for the OpenAI Agents SDK (`@openai/agents`
 * 0.20.x), and the final-answer guard as an output guardrail.
 *
 * `agentTool(runner, action)` returns a `tool()` whose result, what the model is shown, is the
 * completion in words (the same text as readback/mcp and readback/ai-sdk), so a `pending` or
 * `partial` result is never presented as done. `completionGuardrail(runner)` trips when the agent's
 * final answer claims more than the run's completions verify.
 *
 * `@openai/agents` is an optional peer dependency, imported only by this subpath.
 */
import type { Completion } from '../contract/types.js';
import { completionText, isCompletion, isErrorStatus } from '../integrations/text.js';
import { guardAnswer } from '../messages/guard.js';

export { completionText, isErrorStatus, isCompletion };
export {
  answerText,
  type CompletionGuardrail,
  type CompletionGuardrailInfo,
  type CompletionGuardrailOptions,
  completionGuardrail,
} from './guardrail.js';
export {
  type AgentTool,
  type AgentToolCall,
  type AgentToolOptions,
  agentTool,
  agentTools,
  type ReadbackCustomData,
} from './tool.js';

/** The completions behind a run's readback tool outputs (`result.newItems`), in the order the model saw them. */
export function completionsOf(result: { newItems: readonly unknown[] }): Completion[] {
  const out: Completion[] = [];
  for (const item of result.newItems) {
    if (typeof item !== 'object' || item === null) continue;
    const { type, customData } = item as { type?: unknown; customData?: { readback?: unknown } };
    if (type === 'tool_call_output_item' && isCompletion(customData?.readback)) out.push(customData.readback);
  }
  return out;
}

/**
 * Checks a final answer against completions: `guardAnswer` from readback, re-exported, for code that
 * checks `result.finalOutput` itself instead of using the guardrail.
 */
export const checkAnswer: typeof guardAnswer = guardAnswer;
export type { GuardResult, Violation, ViolationKind } from '../messages/guard.js';
