/**
 * What every agent integration shows a model for a completion, shared so that MCP, the AI SDK and
 * the other adapters speak the same words. No framework imports here.
 */
import type { Completion, Status } from '../contract/types.js';

/** True for statuses reported as tool errors: `failed` and `unknown`. */
export function isErrorStatus(status: Status): boolean {
  return status === 'failed' || status === 'unknown';
}

/** The text a model is shown for a completion: its status in words, the allowed message and the operation. */
export function completionText(completion: Completion): string {
  const head = [`status: ${completion.status}`];
  if (completion.errorCode) head.push(`errorCode: ${completion.errorCode}`);
  if (completion.nextAllowedAction !== 'none') head.push(`next: ${completion.nextAllowedAction}`);
  return `[${head.join(', ')}] ${completion.message} (operation ${completion.operationId})`;
}
