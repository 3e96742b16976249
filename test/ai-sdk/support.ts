import { MockLanguageModelV3 } from 'ai/test';
import { expect } from 'vitest';
import type { Completion } from '../../src/index.js';

// The provider spec types, taken from the mock so the tests need no direct @ai-sdk/provider import.
type LanguageModelV3GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;
type LanguageModelV3Prompt = MockLanguageModelV3['doGenerateCalls'][number]['prompt'];

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
};

/** A model step that calls one tool. */
export function callStep(
  toolName: string,
  input: unknown,
  toolCallId = 'call-1',
): LanguageModelV3GenerateResult {
  return {
    content: [{ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage,
    warnings: [],
  };
}

/** A model step that answers with text. */
export function answerStep(text: string): LanguageModelV3GenerateResult {
  return {
    content: [{ type: 'text', text }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage,
    warnings: [],
  };
}

/** A scripted model: calls `toolName` with `input`, then answers `answer`. */
export function scriptedModel(toolName: string, input: unknown, answer: string): MockLanguageModelV3 {
  return new MockLanguageModelV3({ doGenerate: [callStep(toolName, input), answerStep(answer)] });
}

/** The tool-result parts in a prompt the model received: exactly what it was shown. */
export function toolResultsIn(prompt: LanguageModelV3Prompt) {
  return prompt.flatMap((message) =>
    message.role === 'tool' ? message.content.filter((part) => part.type === 'tool-result') : [],
  );
}

/** The one tool output the model was shown on its second call. */
export function shownOnSecondCall(model: MockLanguageModelV3) {
  expect(model.doGenerateCalls).toHaveLength(2);
  const second = model.doGenerateCalls[1];
  if (!second) throw new Error('no second call');
  const results = toolResultsIn(second.prompt);
  expect(results).toHaveLength(1);
  return results[0]?.output;
}

/** The single completion a generateText run produced. */
export function onlyCompletion(completions: Completion[]): Completion {
  expect(completions).toHaveLength(1);
  const c = completions[0];
  if (!c) throw new Error('no completion');
  return c;
}
