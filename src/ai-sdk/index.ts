/**
 * readback/ai-sdk: readback actions as tools for the Vercel AI SDK (`ai` 6.x and 7.x).
 *
 * Each tool call runs through `runner.run` and its result (what `generateText` returns in
 * `toolResults`) is the honest Completion. What the model is shown comes from `toModelOutput`: the
 * same text as readback/mcp (the status in words, the allowed message, the operation id), as an
 * `error-text` output for `failed` and `unknown` and as a plain `text` output otherwise, so a
 * `pending` or `partial` result is never presented as done.
 *
 * After `generateText`, `checkAnswer(result.text, completionsOf(result))` checks the final answer
 * against what the run actually verified.
 *
 * Shadow-mode actions (the runner's or the action's `shadow: true`) are served by `shadowAiTool`, whose
 * result is the live tool's own response, shown to the model as the SDK would show it without readback;
 * `aiTools` picks the right one per action.
 *
 * `ai` is an optional peer dependency, imported only by this subpath.
 */
import { asSchema, type JSONSchema7, jsonSchema, type Tool, tool } from 'ai';
import type { Action, Completion } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import { actionList, checkRunner } from '../integrations/options.js';
import {
  CONTEXT_REFUSED_TEXT,
  completionText,
  isCompletion,
  isErrorStatus,
  liveResponse,
  notRunText,
} from '../integrations/text.js';
import { guardAnswer } from '../messages/guard.js';
import { prevalidated } from '../runner/prevalidated.js';
import type { Runner, RunOptions } from '../runner/runner.js';
import { type StandardSchemaV1, validateInput } from '../schema.js';

export { completionText, isCompletion, isErrorStatus };

/** What a tool result shows the model; the AI SDK's `ToolResultOutput` (not exported by `ai` itself). */
export type ModelOutput = Awaited<ReturnType<NonNullable<Tool['toModelOutput']>>>;

/**
 * What a per-call option is given: the part of the SDK's tool execution options that ai 6 and 7 share
 * (7 made `ToolExecutionOptions` generic over a tool context, so it is not named here).
 */
export interface ToolCallInfo {
  toolCallId: string;
  abortSignal?: AbortSignal;
  messages: unknown[];
}

/** A value that depends on the tool call: given as is, or derived from the SDK's execution options. */
type PerCall<T> = T | ((options: ToolCallInfo) => T);

/** Options for `aiTool` and `aiTools`. */
export interface AiToolOptions {
  /** Replaces the tool description (default: the action's description plus its postcondition). */
  description?: string;
  /** Display title of the tool. */
  title?: string;
  /** Scope given to every run (e.g. `{ tenant: 'acme' }`), or derived per call. */
  scope?: PerCall<Record<string, string>>;
  /**
   * The run id. Default: one random id per `aiTool`/`aiTools` call, so create the tools once per
   * conversation (or pass a conversation id here). Calls in one run that repeat the same input share
   * an idempotency key: a model that retries a call gets the same operation back, not a second effect.
   */
  runId?: PerCall<string>;
  /** The actor for authorization and records. */
  actor?: PerCall<string | undefined>;
  /** Accepted mode: wait within the poll budget (default true) or return `pending` at once. */
  wait?: boolean;
  /**
   * Who validates the model's arguments. `'readback'` (default): the SDK lists the schema but does not
   * validate it, so every call reaches the runner, which validates it once and records an invalid one
   * (`tool.selected` with `valid: false` and its issues) as a `failed`/`invalid_input` completion that tells
   * the model what was wrong and where. `'sdk'`: the SDK validates first and rejects an invalid call itself
   * (a `tool-error` with `InvalidToolInputError`, which `experimental_repairToolCall` can repair), so readback
   * never sees it; the runner takes a valid call's parsed arguments as they are (see `PREVALIDATED`).
   */
  inputValidation?: 'readback' | 'sdk';
}

function resolve<T>(value: PerCall<T> | undefined, options: ToolCallInfo): T | undefined {
  return typeof value === 'function' ? (value as (o: ToolCallInfo) => T)(options) : value;
}

/** True when the AI SDK treats the schema as zod (it checks the Standard Schema vendor). */
function isZod(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return false;
  return (schema as { '~standard'?: { vendor?: unknown } })['~standard']?.vendor === 'zod';
}

interface JsonSchemaConverter {
  input(options: { target: string }): Record<string, unknown>;
}

type InputSchema<I> = Tool<I, Completion>['inputSchema'];

/**
 * The JSON Schema the model is shown, computed when the SDK first lists the tool: for zod, or another Standard
 * Schema with its own JSON Schema converter (Standard JSON Schema), exactly what the SDK derives itself
 * (`asSchema`, which also closes every object with `additionalProperties: false`); else an open object.
 */
function listedSchema(schema: StandardSchemaV1): () => JSONSchema7 | PromiseLike<JSONSchema7> {
  const converter = (schema['~standard'] as { jsonSchema?: JsonSchemaConverter }).jsonSchema;
  if (isZod(schema) || (converter && typeof converter.input === 'function')) {
    return () => asSchema(schema as unknown as InputSchema<unknown>).jsonSchema;
  }
  return () => ({ type: 'object', additionalProperties: true });
}

/**
 * The tool's input schema. By default a `jsonSchema()` with no `validate`: the SDK lists it and passes the
 * parsed arguments through untouched (it skips validation when `validate` is absent), so readback's runner
 * validates them once and an invalid call becomes a recorded `invalid_input` completion instead of an SDK
 * rejection readback never sees. With `inputValidation: 'sdk'` the SDK validates: a zod schema is handed
 * over as is (the SDK's own zod path), any other through its Standard Schema `validate`.
 */
function inputSchemaOf<I>(action: Action<I, unknown>, validation: 'readback' | 'sdk'): InputSchema<I> {
  if (validation === 'readback') return jsonSchema<I>(listedSchema(action.input));
  if (isZod(action.input)) return action.input as unknown as InputSchema<I>;
  const schema = action.input;
  return jsonSchema<I>(listedSchema(schema), {
    validate: async (value) => {
      const result = await validateInput(schema, value);
      // The SDK wraps this error in its TypeValidationError, whose message the model is shown.
      return result.ok
        ? { success: true, value: result.value }
        : { success: false, error: new Error(result.issues.join('; ')) };
    },
  });
}

/** The `inputValidation` option, checked: a misspelt value would silently change who validates. */
function validationOf(options: AiToolOptions): 'readback' | 'sdk' {
  const value = options.inputValidation ?? 'readback';
  if (value !== 'readback' && value !== 'sdk') {
    throw new ReadbackError('invalid_options', "must be 'readback' or 'sdk'", 'inputValidation');
  }
  return value;
}

/** The model's view of a completion: an error output for `failed`/`unknown`, text for every other status. */
export function modelOutput(completion: Completion): ModelOutput {
  const value = completionText(completion);
  return isErrorStatus(completion.status) ? { type: 'error-text', value } : { type: 'text', value };
}

/**
 * The run context for one tool call, with the SDK's tool call id as the trace's `gen_ai.tool.call.id`. A
 * per-call option that throws refuses the call before anything runs: the SDK shows the model this error's
 * message (nothing ran, changing the arguments will not help), and the option's own error is its `cause`.
 */
function contextOf(options: AiToolOptions, callOptions: ToolCallInfo, defaultRunId: string): RunOptions {
  try {
    return resolveContext(options, callOptions, defaultRunId);
  } catch (error) {
    // Its raw message would reach the model, which could take it for a complaint about its arguments.
    throw new Error(CONTEXT_REFUSED_TEXT, { cause: error });
  }
}

/** The run context of one call; with `inputValidation: 'sdk'` the SDK parsed the input with the action's schema. */
function callContext(
  options: AiToolOptions,
  callOptions: ToolCallInfo,
  defaultRunId: string,
  validation: 'readback' | 'sdk',
): RunOptions {
  const ctx = contextOf(options, callOptions, defaultRunId);
  return validation === 'sdk' ? prevalidated(ctx) : ctx;
}

function resolveContext(options: AiToolOptions, callOptions: ToolCallInfo, defaultRunId: string): RunOptions {
  const scope = resolve(options.scope, callOptions);
  const actor = resolve(options.actor, callOptions);
  const { toolCallId } = callOptions;
  return {
    runId: resolve(options.runId, callOptions) ?? defaultRunId,
    ...(typeof toolCallId === 'string' && toolCallId !== '' ? { toolCallId } : {}),
    ...(callOptions.abortSignal ? { signal: callOptions.abortSignal } : {}),
    ...(scope ? { scope } : {}),
    ...(actor ? { actor } : {}),
    ...(options.wait !== undefined ? { wait: options.wait } : {}),
  };
}

function descriptionOf(
  action: { description: string; postcondition: string },
  options: AiToolOptions,
): string {
  return (
    options.description ??
    `${action.description}\nPostcondition (checked by reading back the state): ${action.postcondition}`
  );
}

/**
 * One action as an AI SDK `tool()`. `execute` resolves to the Completion (it never throws for an
 * outcome; only misuse, or a per-call option that throws, rejects), with the tool call's `abortSignal`
 * passed to the run. A shadow-mode action is refused: use `shadowAiTool` (or `aiTools`, which chooses).
 */
export function aiTool<I, O>(
  runner: Runner,
  action: Action<I, O>,
  options: AiToolOptions = {},
): Tool<I, Completion> {
  checkRunner(runner);
  runner.register(action);
  if (runner.inShadow(action)) {
    throw new ReadbackError(
      'invalid_options',
      `"${action.name}" runs in shadow mode: use shadowAiTool(), whose result is the live tool's own`,
      'action',
    );
  }
  const validation = validationOf(options);
  const defaultRunId = `ai:${crypto.randomUUID()}`;
  // No explicit type arguments: ai 7's two-argument overload of tool() reads them as <INPUT, CONTEXT>.
  return tool({
    description: descriptionOf(action, options),
    ...(options.title !== undefined ? { title: options.title } : {}),
    inputSchema: inputSchemaOf(action as Action<I, unknown>, validation),
    execute: async (input: I, callOptions: ToolCallInfo): Promise<Completion> =>
      runner.run(action, input, callContext(options, callOptions, defaultRunId, validation)),
    toModelOutput: ({ output }: { output: Completion }) => modelOutput(output),
  });
}

/**
 * One shadow-mode action as an AI SDK `tool()`, for rolling readback out under a live tool: `execute`
 * resolves to the live tool's own response (readback's `accepted`/`rejected` markers unwrapped) and
 * re-throws the tool's own error, so the model sees what it saw before; readback's verdict goes to the
 * record, the trace and `readback ops list --shadow`, never to the model. A call readback refused before
 * the tool ran (invalid input, by default validated by readback) throws an error saying so. An action not in
 * shadow mode is refused: use `aiTool`.
 */
export function shadowAiTool<I, O>(
  runner: Runner,
  action: Action<I, O>,
  options: AiToolOptions = {},
): Tool<I, unknown> {
  checkRunner(runner);
  runner.register(action);
  // Refused now rather than on every call: the runner would reject each one as not in shadow mode.
  if (!runner.inShadow(action)) {
    throw new ReadbackError(
      'invalid_options',
      `"${action.name}" is not in shadow mode: use aiTool(), whose result is the verified completion`,
      'action',
    );
  }
  const validation = validationOf(options);
  const defaultRunId = `ai:${crypto.randomUUID()}`;
  return tool({
    description: descriptionOf(action, options),
    ...(options.title !== undefined ? { title: options.title } : {}),
    inputSchema: inputSchemaOf(action as Action<I, unknown>, validation),
    execute: async (input: I, callOptions: ToolCallInfo): Promise<unknown> => {
      const shadow = await runner.shadow(
        action,
        input,
        callContext(options, callOptions, defaultRunId, validation),
      );
      if (!shadow.executed) throw new Error(notRunText(shadow.completion));
      return liveResponse(shadow.result).value;
    },
  });
}

/**
 * A tool set, one tool per action, keyed by action name (the name the model calls): `shadowAiTool` for a
 * shadow-mode action, `aiTool` for the others. All tools share one default run id; per-action options
 * override the shared ones.
 */
export function aiTools(
  runner: Runner,
  // biome-ignore lint/suspicious/noExplicitAny: an action list mixes input types.
  actions: readonly Action<any, any>[] | Record<string, Action<any, any>>,
  options: AiToolOptions & { actions?: Record<string, AiToolOptions> } = {},
): Record<string, Tool<unknown, Completion> | Tool<unknown, unknown>> {
  checkRunner(runner);
  const list = actionList(actions, options.actions);
  const { actions: perAction, ...shared } = options;
  const runId = shared.runId ?? `ai:${crypto.randomUUID()}`;
  const tools: Record<string, Tool<unknown, Completion> | Tool<unknown, unknown>> = {};
  for (const action of list) {
    const own = { ...shared, runId, ...perAction?.[action.name] };
    tools[action.name] = runner.inShadow(action)
      ? shadowAiTool(runner, action, own)
      : aiTool(runner, action, own);
  }
  return tools;
}

/** The completions in a `generateText` result (every step's tool results that came from readback tools). */
export function completionsOf(result: {
  steps: readonly { toolResults: readonly { output?: unknown }[] }[];
}): Completion[] {
  return result.steps.flatMap((step) => step.toolResults.map((r) => r.output)).filter(isCompletion);
}

/**
 * Checks a final answer (e.g. `result.text` after `generateText`) against the run's completions:
 * `guardAnswer` from readback, re-exported. `ok` is false when the answer claims an effect that no
 * completion verified, or an action that never ran.
 */
export const checkAnswer: typeof guardAnswer = guardAnswer;
export type { GuardResult, Violation, ViolationKind } from '../messages/guard.js';
