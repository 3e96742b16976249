/**
 * What every agent integration shows a model for a completion, shared so that MCP, the AI SDK and
 * the other adapters speak the same words. No framework imports here.
 */
import type { Completion, Status } from '../contract/types.js';
import { STATUSES } from '../contract/types.js';
import { isAccepted, isRejected } from '../runner/markers.js';

/** True for statuses reported as tool errors: `failed` and `unknown`. */
export function isErrorStatus(status: Status): boolean {
  return status === 'failed' || status === 'unknown';
}

/**
 * The text a model is shown for a completion: its status in words, the allowed message, for pending work when
 * to poll again (`pollAfter`), and the operation.
 */
export function completionText(completion: Completion): string {
  // A shadow completion is an operator observation: say so first, so no reader takes it as proof.
  const head = completion.shadow
    ? ['shadow observation, not proof', `status: ${completion.status}`]
    : [`status: ${completion.status}`];
  if (completion.errorCode) head.push(`errorCode: ${completion.errorCode}`);
  if (completion.nextAllowedAction !== 'none') head.push(`next: ${completion.nextAllowedAction}`);
  // The `(operation …)` suffix stays last: the OpenAI Agents guardrail finds a run's operations by it.
  return `[${head.join(', ')}] ${completion.message}${pollAgainClause(completion)} (operation ${completion.operationId})`;
}

// ` (poll again after <time>)` for pending work parked until a due time: a poll before then reads nothing.
function pollAgainClause(completion: Completion): string {
  const after = pollAfterOf(completion);
  return after === undefined ? '' : ` (poll again after ${after})`;
}

/** The completion's `pollAfter` when a model should pace its polls by it: pending work told to poll. */
export function pollAfterOf(completion: Completion): string | undefined {
  // Not an in-doubt `unknown`: it carries `pollAfter` too, but a poll of it reads at once, so waiting only delays.
  return completion.status === 'pending' &&
    completion.nextAllowedAction === 'poll' &&
    typeof completion.pollAfter === 'string'
    ? completion.pollAfter
    : undefined;
}

/** True for a value shaped like a readback Completion. */
export function isCompletion(value: unknown): value is Completion {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<Completion>;
  return (
    typeof v.status === 'string' &&
    (STATUSES as readonly string[]).includes(v.status as Status) &&
    typeof v.operationId === 'string' &&
    typeof v.message === 'string'
  );
}

/** What a model is shown when a shadow-mode call never reached the live tool (readback refused the call). */
export function notRunText(completion: Completion): string {
  const code = completion.errorCode ? `: ${completion.errorCode}` : '';
  return `[not executed${code}] ${completion.reason ?? 'The call was refused before the tool ran.'} Nothing was executed.`;
}

/**
 * What a model is shown when a per-call option (scope, actor or run id) refused the call: nothing ran, and the
 * arguments were fine, so it must not change them and retry; the option's own error stays with the developer.
 */
export const CONTEXT_REFUSED_TEXT =
  '[not executed] The call was refused before the tool ran (its scope, actor or run id could not be determined), so nothing was executed. Changing the arguments will not help.';

/** A live tool's own result as text: a string as is, anything else as JSON (`undefined` as an empty string). */
export function rawText(result: unknown): string {
  if (typeof result === 'string') return result;
  if (result === undefined) return '';
  try {
    return JSON.stringify(result) ?? '';
  } catch {
    // The tool ran and answered: a bigint id or a cyclic object must not turn its answer into an error
    // the model would retry (shadow mode does not deduplicate).
    return lenientJson(result);
  }
}

/** JSON with bigints as strings and repeated objects as `[Circular]`; `String()` if even that fails. */
function lenientJson(value: unknown): string {
  const seen = new WeakSet<object>();
  try {
    return JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === 'bigint') return v.toString();
      if (typeof v === 'object' && v !== null) {
        if (seen.has(v)) return '[Circular]';
        seen.add(v);
      }
      return v;
    });
  } catch {
    try {
      return String(value);
    } catch {
      return '[unprintable result]';
    }
  }
}

/**
 * A live tool's own response inside readback's markers, for shadow mode: `accepted(ref, raw)` gives the
 * provider's response (else its reference), `rejected(code, reason, raw)` the response (else code and
 * reason); any other value is already the tool's own. `refused` says the tool reported a refusal.
 */
export function liveResponse(result: unknown): { value: unknown; refused: boolean } {
  if (isAccepted(result)) return { value: result.raw ?? result.ref, refused: false };
  if (isRejected(result)) {
    return { value: result.raw ?? { code: result.code, reason: result.reason }, refused: true };
  }
  return { value: result, refused: false };
}
