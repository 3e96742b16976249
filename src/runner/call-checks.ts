import { canonicalJson, fingerprintOf, hashText, intentFingerprint, UnusableValue } from '../canonical.js';
import type { Action, AnyAction, Completion, RunContext } from '../contract/types.js';
import { optionalBoolean, ReadbackError } from '../errors.js';
import { toCompletion } from './outcome.js';
import { describeError } from './readback.js';

// The checks and derivations `runner.run` makes of one call before anything is reserved: the context's
// shape, the authorization policy, the idempotency key, and the completion of a key reused for another intent.

/** The completion of a call whose idempotency key was already used for a different intent. */
export function conflict(action: AnyAction, target: string, key: string, operationId: string): Completion {
  return toCompletion(
    {
      status: 'failed',
      target,
      operationId,
      idempotencyKey: key,
      attempt: 0,
      nothingExecuted: true,
      errorCode: 'idempotency_conflict',
      reason: `idempotency key "${key}" was already used for a different request (operation ${operationId})`,
    },
    action,
  );
}

/** Throws `invalid_context` (misuse) for a run context readback cannot use. */
export function checkContext(ctx: RunContext): void {
  if (typeof ctx !== 'object' || ctx === null) {
    throw new ReadbackError('invalid_context', 'expected a run context object', 'ctx');
  }
  if (typeof ctx.runId !== 'string' || ctx.runId === '') {
    throw new ReadbackError('invalid_context', 'must be a non-empty string', 'ctx.runId');
  }
  const scope: unknown = ctx.scope;
  // A string or array scope would pass the value check below char by char and be recorded as given.
  if (scope !== undefined && (typeof scope !== 'object' || scope === null || Array.isArray(scope))) {
    throw new ReadbackError('invalid_context', 'must be an object of string values', 'ctx.scope');
  }
  for (const [key, value] of Object.entries(ctx.scope ?? {})) {
    if (typeof value !== 'string')
      throw new ReadbackError('invalid_context', 'scope values must be strings', `ctx.scope.${key}`);
  }
  if (
    ctx.idempotencyKey !== undefined &&
    (typeof ctx.idempotencyKey !== 'string' || ctx.idempotencyKey === '')
  ) {
    throw new ReadbackError('invalid_context', 'must be a non-empty string', 'ctx.idempotencyKey');
  }
  checkSignal(ctx.signal, 'ctx.signal', 'invalid_context');
  optionalBoolean(ctx.wait, 'ctx.wait', 'invalid_context');
  // The run options recorded with the call (the actor on the record's events, the rest in the trace); read
  // one by one, not in a loop over names: this runs on every call.
  const facts = ctx as RunContext &
    Partial<Record<'tenant' | 'environment' | 'toolCallId' | 'turn', unknown>> & {
      toolsExposed?: unknown;
    };
  textFact(facts.actor, 'ctx.actor');
  textFact(facts.tenant, 'ctx.tenant');
  textFact(facts.environment, 'ctx.environment');
  textFact(facts.toolCallId, 'ctx.toolCallId');
  if (facts.turn !== undefined && (typeof facts.turn !== 'number' || !Number.isFinite(facts.turn))) {
    throw new ReadbackError('invalid_context', 'must be a finite number', 'ctx.turn');
  }
  const tools = facts.toolsExposed;
  if (tools !== undefined && !(Array.isArray(tools) && tools.every((name) => typeof name === 'string'))) {
    throw new ReadbackError('invalid_context', 'must be an array of tool names', 'ctx.toolsExposed');
  }
}

function textFact(value: unknown, field: string): void {
  if (value !== undefined && typeof value !== 'string') {
    throw new ReadbackError('invalid_context', 'must be a string', field);
  }
}

/** Throws unless `signal` is undefined or an AbortSignal (one that is not would never stop anything). */
export function checkSignal(
  signal: unknown,
  field: string,
  code: 'invalid_context' | 'invalid_options' = 'invalid_options',
): void {
  if (signal === undefined) return;
  const s = signal as Partial<AbortSignal> | null;
  if (typeof s?.aborted !== 'boolean' || typeof s.addEventListener !== 'function') {
    throw new ReadbackError(code, 'must be an AbortSignal', field);
  }
}

/** The reason the action's policy denies this call, or undefined when allowed; a failing policy denies. */
export async function authorize<I>(
  // biome-ignore lint/suspicious/noExplicitAny: only the input type matters here.
  action: Action<I, any>,
  input: I,
  ctx: RunContext,
): Promise<string | undefined> {
  if (!action.authorize) return undefined;
  try {
    const result = await action.authorize(input, ctx);
    if (result === true || (typeof result === 'object' && result !== null && result.allowed === true))
      return undefined;
    if (typeof result === 'object' && result !== null && 'reason' in result) return result.reason;
    return 'the authorization policy denied this call';
  } catch (error) {
    // Fail closed: a broken policy must not let the call through.
    return `the authorization policy failed: ${describeError(error)}`;
  }
}

/** The call's idempotency key: the action's own, the caller's, or run + action + intent; undefined if unusable. */
export function idempotencyKeyFor<I>(
  // biome-ignore lint/suspicious/noExplicitAny: only the input type matters here.
  action: Action<I, any>,
  input: I,
  ctx: RunContext,
  fingerprint: string,
): string | undefined {
  if (action.idempotencyKey) {
    try {
      const key = action.idempotencyKey(input, ctx);
      return typeof key === 'string' && key !== '' ? key : undefined;
    } catch {
      return undefined;
    }
  }
  // By default the same call repeated within one run is one operation; another run is a new request.
  return ctx.idempotencyKey ?? `${ctx.runId}:${action.name}:${fingerprint.slice(0, 32)}`;
}

/** A call's intent fingerprint and, when traced, its argument hash; or why the input cannot be fingerprinted. */
export type Intent = { fingerprint: string; argsHash: string | null } | { unusable: string };

/**
 * Fingerprints the intent as selected, before authorization. The trace's argument hash is the SHA-256 of
 * the same canonical text of the input, so that text is written once (`traced` asks for the hash).
 */
export function intentOf(
  action: string,
  target: string,
  input: unknown,
  scope: Record<string, string>,
  traced: boolean,
): Intent {
  try {
    const inputJson = input === undefined ? undefined : canonicalJson(input);
    const fingerprint = fingerprintOf(action, target, inputJson, scope);
    return { fingerprint, argsHash: traced ? hashText(inputJson ?? 'null') : null };
  } catch {
    // The copying path throws again and names where in the intent (input.…) the value could not be recorded.
    try {
      intentFingerprint({ action, target, input, scope });
      return { unusable: 'input is not plain data' };
    } catch (error) {
      return {
        unusable:
          error instanceof UnusableValue
            ? `input is not plain data (${error.message})`
            : describeError(error),
      };
    }
  }
}
