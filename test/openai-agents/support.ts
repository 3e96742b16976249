import {
  Agent,
  type AgentInputItem,
  OutputGuardrailTripwireTriggered,
  Runner,
  setTracingDisabled,
} from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing';
import { expect } from 'vitest';
import type { Completion } from '../../src/index.js';
import {
  type AgentTool,
  type CompletionGuardrailInfo,
  completionGuardrail,
} from '../../src/openai-agents/index.js';
import type { Runner as ReadbackRunner } from '../../src/runner/runner.js';

// Offline: no trace may leave the process (importing @openai/agents installs the OpenAI exporter).
setTracingDisabled(true);

/** A scripted model: calls `toolName` with `input`, then answers `answer`. */
export function scriptedModel(
  toolName: string,
  input: Record<string, unknown>,
  answer: string,
): ScriptedModel {
  return new ScriptedModel([
    [functionCall(toolName, input, { callId: 'call-1' })],
    [assistantMessage(answer)],
  ]);
}

/** The `function_call_result` items in the input of one model call: exactly what the model was shown. */
export function toolResultsIn(model: ScriptedModel, callIndex: number) {
  const call = model.calls[callIndex];
  if (!call) throw new Error(`no model call ${callIndex}`);
  const input = call.request.input as AgentInputItem[] | string;
  if (typeof input === 'string') return [];
  return input.filter((item) => item.type === 'function_call_result');
}

/** The one tool output the model was shown on its second call. */
export function shownOnSecondCall(model: ScriptedModel): unknown {
  expect(model.calls).toHaveLength(2);
  const results = toolResultsIn(model, 1);
  expect(results).toHaveLength(1);
  return (results[0] as { output: unknown }).output;
}

/** What an agent run ended with: the final output, or the guardrail's tripwire report. */
export type Outcome =
  | { tripped: false; finalOutput: unknown; newItems: readonly unknown[] }
  | { tripped: true; info: CompletionGuardrailInfo };

/** Runs a helpdesk agent with the readback tools and the completion guardrail, tracing disabled. */
export async function runAgent(
  runner: ReadbackRunner,
  model: ScriptedModel,
  tools: AgentTool[],
  prompt = 'Please help.',
): Promise<Outcome> {
  const agent = new Agent({
    name: 'helpdesk',
    instructions: 'Use the tools; report only what the tool results say.',
    model,
    tools,
    outputGuardrails: [completionGuardrail(runner)],
  });
  try {
    const result = await new Runner({ tracingDisabled: true }).run(agent, prompt);
    return { tripped: false, finalOutput: result.finalOutput, newItems: result.newItems };
  } catch (error) {
    if (error instanceof OutputGuardrailTripwireTriggered) {
      return { tripped: true, info: error.result.output.outputInfo as CompletionGuardrailInfo };
    }
    throw error;
  }
}

/** The single completion in a list. */
export function only(completions: Completion[]): Completion {
  expect(completions).toHaveLength(1);
  const c = completions[0];
  if (!c) throw new Error('no completion');
  return c;
}
