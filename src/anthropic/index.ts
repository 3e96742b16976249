/**
 * readback/anthropic: a completion as an Anthropic Messages API `tool_result` block. No runtime dependency:
 * the block is plain data, type-checked in the tests against `@anthropic-ai/sdk`'s `ToolResultBlockParam`.
 */
import type { Completion } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import {
  completionText,
  isCompletion,
  isErrorStatus,
  liveResponse,
  notRunText,
  pollAfterOf,
  rawText,
} from '../integrations/text.js';
import type { ShadowResult } from '../runner/shadow.js';

/** The `tool_result` content block this module produces (a structural subset of the SDK's type). */
export interface CompletionToolResult {
  type: 'tool_result';
  tool_use_id: string;
  content: Array<{ type: 'text'; text: string }>;
  is_error: boolean;
}

/**
 * The block that answers one `tool_use`: the allowed message with the status in words, the completion as JSON
 * for the model to reason about, and `is_error` for `failed` and `unknown`, so the model cannot read them as done.
 */
export function toolResult(toolUseId: string, completion: Completion): CompletionToolResult {
  if (typeof toolUseId !== 'string' || toolUseId === '') {
    throw new ReadbackError(
      'invalid_options',
      'must be the id of the tool_use block being answered',
      'toolUseId',
    );
  }
  // Anything else (a ShadowResult, the tool's raw output) would be shown to the model as a status it is not.
  if (!isCompletion(completion)) {
    throw new ReadbackError(
      'invalid_options',
      'expected the Completion that runner.run resolved to (for runner.shadow, use shadowToolResult)',
      'completion',
    );
  }
  return {
    type: 'tool_result',
    tool_use_id: toolUseId,
    content: [
      { type: 'text', text: completionText(completion) },
      { type: 'text', text: JSON.stringify(modelView(completion)) },
    ],
    is_error: isErrorStatus(completion.status),
  };
}

/**
 * The block that answers one `tool_use` in shadow mode (`runner.shadow`): the live tool's own response as
 * text (readback's markers unwrapped; a string as is, else JSON), `is_error` only when the tool reported a
 * refusal or readback refused the call before it ran. Readback's verdict is not in it: it is for operators.
 */
export function shadowToolResult(toolUseId: string, shadow: ShadowResult): CompletionToolResult {
  if (typeof toolUseId !== 'string' || toolUseId === '') {
    throw new ReadbackError(
      'invalid_options',
      'must be the id of the tool_use block being answered',
      'toolUseId',
    );
  }
  const given = shadow as Partial<ShadowResult> | null;
  if (typeof given !== 'object' || given === null || typeof given.executed !== 'boolean') {
    throw new ReadbackError(
      'invalid_options',
      'expected the ShadowResult that runner.shadow resolved to (for runner.run, use toolResult)',
      'shadow',
    );
  }
  if (!shadow.executed) {
    const text = notRunText(shadow.completion);
    return { type: 'tool_result', tool_use_id: toolUseId, content: [{ type: 'text', text }], is_error: true };
  }
  const { value, refused } = liveResponse(shadow.result);
  return {
    type: 'tool_result',
    tool_use_id: toolUseId,
    content: [{ type: 'text', text: rawText(value) }],
    is_error: refused,
  };
}

// The fields a model needs to act honestly; evidence and checks stay in the trace, not the prompt.
function modelView(c: Completion) {
  return {
    status: c.status,
    action: c.action,
    target: c.target,
    operationId: c.operationId,
    ...(c.errorCode ? { errorCode: c.errorCode } : {}),
    ...(c.units ? { units: c.units } : {}),
    nextAllowedAction: c.nextAllowedAction,
    // When pending work may be polled again; polling earlier returns the same pending completion.
    ...(pollAfterOf(c) !== undefined ? { pollAfter: c.pollAfter } : {}),
    safeToRepeat: c.safeToRepeat,
  };
}
