/**
 * readback actions as function tools for the OpenAI Agents SDK (`@openai/agents` 0.20.x).
 *
 * Every call runs through `runner.run`; the tool's result, which is what the model is shown, is the
 * completion in words (`completionText`: the status, the allowed message, the operation id), never
 * the raw write response. The Completion itself rides along as the tool output item's `customData`
 * (SDK-only, not sent to the model) and is remembered for the run, where `completionGuardrail` reads it.
 *
 * A shadow-mode action (the runner's or the action's `shadow: true`) runs through `runner.shadow`: the model
 * is shown the live tool's own response, as before readback, and its verdict stays with operators (the
 * record, the trace, `readback ops list --shadow`); it is never remembered as proof for the guardrail.
 */
import { type FunctionTool, type RunContext, tool } from '@openai/agents';
import type { Action, AnyAction, Completion } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import { actionList, checkRunner } from '../integrations/options.js';
import { CONTEXT_REFUSED_TEXT, completionText, liveResponse, notRunText } from '../integrations/text.js';
import { prevalidated } from '../runner/prevalidated.js';
import type { Runner, RunOptions } from '../runner/runner.js';
import { existingLedger, ledgerOf } from './runs.js';

/** The parts of the SDK's per-call details (`ToolCallDetails`, not exported by the SDK) readback reads. */
export interface AgentToolCall {
  toolCall?: { callId: string; name?: string } | undefined;
  signal?: AbortSignal | undefined;
}

/** A value that depends on the call: given as is, or derived from the SDK's run context and call details. */
type PerCall<T> = T | ((runContext: RunContext<unknown>, call: AgentToolCall) => T);

/** Options for `agentTool` and `agentTools`. */
export interface AgentToolOptions {
  /** Replaces the tool description (default: the action's description plus its postcondition). */
  description?: string;
  /** Scope given to every run (e.g. `{ tenant: 'acme' }`), or derived per call. */
  scope?: PerCall<Record<string, string>>;
  /**
   * The readback run id. Default: one random id per SDK run (per `RunContext`), shared by every
   * readback tool in that run, so a model that repeats a call in the run gets the same operation back
   * instead of a second effect. Pass a conversation id here to extend that across runs.
   */
  runId?: PerCall<string>;
  /** The actor for authorization and records. */
  actor?: PerCall<string | undefined>;
  /** Accepted mode: wait within the poll budget (default true) or return `pending` at once. */
  wait?: boolean;
}

/** The SDK-only data attached to each tool output item: the completion behind what the model saw. */
export interface ReadbackCustomData {
  readback: Completion;
}

/** A readback function tool: what the model sees is the completion, in words. */
// biome-ignore lint/suspicious/noExplicitAny: it must fit an Agent of any context type.
export type AgentTool = FunctionTool<any, any, string>;

const OPEN_OBJECT = { type: 'object', properties: {}, required: [], additionalProperties: true } as const;

function resolve<T>(value: PerCall<T> | undefined, runContext: RunContext<unknown>, call: AgentToolCall) {
  return typeof value === 'function'
    ? (value as (r: RunContext<unknown>, c: AgentToolCall) => T)(runContext, call)
    : value;
}

/** True when the SDK treats the schema as a zod object (it lists and validates those itself). */
function isZodObject(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return false;
  const std = (schema as { '~standard'?: { vendor?: unknown } })['~standard'];
  if (std?.vendor !== 'zod') return false;
  // zod 4 keeps its definition under `_zod.def`; zod 3 under `_def`.
  type Def = { type?: unknown; typeName?: unknown };
  const z = schema as { _zod?: { def?: Def }; _def?: Def };
  const def = z._zod?.def ?? z._def;
  return def?.type === 'object' || def?.typeName === 'ZodObject';
}

interface JsonSchemaConverter {
  input(options: { target: string }): Record<string, unknown>;
}

/**
 * The tool's parameters. A zod object goes to the SDK as is (strict mode: listed to the model and
 * validated before anything runs). Any other Standard Schema is listed through its own JSON Schema
 * converter when it has one, else as an open object, in non-strict mode: readback validates it, so
 * invalid input becomes a `failed` / `invalid_input` completion the model is shown.
 */
function parametersOf(action: AnyAction): { parameters: unknown; strict: boolean } {
  if (isZodObject(action.input)) return { parameters: action.input, strict: true };
  const converter = (action.input['~standard'] as { jsonSchema?: JsonSchemaConverter }).jsonSchema;
  if (converter && typeof converter.input === 'function') {
    // `$schema` names the dialect for validators; a function's parameters are a bare schema.
    const { $schema: _dialect, ...converted } = converter.input({ target: 'draft-07' });
    if (converted.type === 'object') {
      return { parameters: { properties: {}, required: [], ...converted }, strict: false };
    }
  }
  return { parameters: OPEN_OBJECT, strict: false };
}

/** What the SDK itself shows the model when a tool throws (its default `errorFunction`; not exported by it). */
const LIVE_TOOL_ERROR_TEXT = 'An error occurred while running the tool. Please try again.';

/** Longest list of validation issues shown to the model; a schema can report one issue per field. */
const MAX_ISSUES_TEXT = 500;

/**
 * What the schema said about the arguments, as `path: message` items, from the SDK's invalid-input error
 * (`originalError`, a zod error or any Standard Schema failure). The SDK leaves it out when tool data is
 * not to be logged (`OPENAI_AGENTS_DONT_LOG_TOOL_DATA`); then the model is told only that they were refused.
 */
function issuesOf(error: unknown): string {
  const original = (error as { originalError?: unknown } | null)?.originalError;
  const issues = (original as { issues?: unknown } | null)?.issues;
  let text = '';
  if (Array.isArray(issues)) {
    text = issues
      .map((issue: { path?: unknown; message?: unknown }) => {
        const path = Array.isArray(issue?.path)
          ? issue.path.map((p: unknown) => String((p as { key?: unknown })?.key ?? p)).join('.')
          : '';
        const message = String(issue?.message ?? 'invalid');
        return path ? `${path}: ${message}` : message;
      })
      .join('; ');
  } else if (original instanceof Error) {
    text = original.message;
  }
  text = text.replace(/\s+/g, ' ').trim();
  return text.length > MAX_ISSUES_TEXT ? `${text.slice(0, MAX_ISSUES_TEXT - 3)}...` : text;
}

/** What the model is shown when the SDK refused the arguments before the tool ran: what was wrong, if known. */
function notExecutedText(error: unknown): string {
  const kind = error instanceof Error ? error.name : 'error';
  const issues = issuesOf(error);
  const what = issues === '' ? '' : ` What was wrong: ${issues}.`;
  return `[not executed: ${kind}] The arguments were rejected before the tool ran, so nothing was executed.${what} Check them against the tool's parameters and call again.`;
}

/**
 * One action as an Agents SDK `tool()`. The model is shown `completionText(completion)`; the run
 * records the Completion for `completionGuardrail` and on the tool output item (`customData.readback`).
 * Misuse of readback (a `ReadbackError` from the runner) fails the SDK run instead of reaching the model.
 */
export function agentTool<I, O>(
  runner: Runner,
  action: Action<I, O>,
  options: AgentToolOptions = {},
): AgentTool {
  checkRunner(runner);
  runner.register(action);
  const fromRunner = new WeakSet<object>();
  const { parameters, strict } = parametersOf(action as AnyAction);
  // Only reached for calls made outside an SDK run (a direct `invoke` with no context).
  const detached = {};
  const shadowed = runner.inShadow(action as AnyAction);
  // Errors the live tool itself threw in shadow mode: shown as the SDK shows any tool's error.
  const fromLiveTool = new WeakSet<object>();
  const shadowCall = async (input: unknown, ctx: RunOptions): Promise<unknown> => {
    let shadow: Awaited<ReturnType<Runner['shadow']>>;
    try {
      shadow = await runner.shadow(action, input, ctx);
    } catch (error) {
      if (typeof error === 'object' && error !== null) {
        (error instanceof ReadbackError ? fromRunner : fromLiveTool).add(error);
      }
      throw error;
    }
    // Readback refused the call before the tool ran (invalid input): say so, as for refused arguments.
    if (!shadow.executed) return notRunText(shadow.completion);
    return liveResponse(shadow.result).value;
  };
  const created = tool({
    name: action.name,
    description:
      options.description ??
      `${action.description}\nPostcondition (checked by reading back the state): ${action.postcondition}`,
    parameters,
    strict,
    execute: async (input: unknown, runContext?: RunContext<unknown>, call: AgentToolCall = {}) => {
      const owner = runContext ?? (detached as RunContext<unknown>);
      const ledger = ledgerOf(owner);
      const callId = call.toolCall?.callId;
      let ctx: RunOptions;
      try {
        const scope = resolve(options.scope, owner, call);
        const actor = resolve(options.actor, owner, call);
        ctx = {
          runId: resolve(options.runId, owner, call) ?? ledger.runId,
          // The model's own call id, for the trace's `gen_ai.tool.call.id`.
          ...(typeof callId === 'string' && callId !== '' ? { toolCallId: callId } : {}),
          ...(call.signal ? { signal: call.signal } : {}),
          ...(scope ? { scope } : {}),
          ...(actor ? { actor } : {}),
          ...(options.wait !== undefined ? { wait: options.wait } : {}),
        };
      } catch {
        // The arguments were fine: telling the model they were rejected would have it change them and retry.
        return CONTEXT_REFUSED_TEXT;
      }
      // In strict mode the SDK parsed the arguments with the action's own zod schema: its output is the input.
      if (strict) prevalidated(ctx);
      if (shadowed) return shadowCall(input, ctx);
      let completion: Completion;
      try {
        completion = await runner.run(action, input, ctx);
      } catch (error) {
        // Anything the runner throws goes to the developer; a non-object gets a wrapper the set can hold,
        // or it would reach the model as "your arguments were rejected" after the effect may have run.
        const thrown = typeof error === 'object' && error !== null ? error : new Error(String(error));
        fromRunner.add(thrown);
        throw thrown;
      }
      ledger.completions.set(completion.operationId, completion);
      if (call.toolCall?.callId) ledger.byCall.set(call.toolCall.callId, completion);
      return completionText(completion);
    },
    errorFunction: (_runContext: unknown, error: unknown) => {
      // The runner throws only on misuse: surface it to the developer, never to the model.
      if (typeof error === 'object' && error !== null && fromRunner.has(error)) throw error;
      if (typeof error === 'object' && error !== null && fromLiveTool.has(error)) return LIVE_TOOL_ERROR_TEXT;
      // The SDK's own argument errors are objects: a thrown string or undefined came from the live tool, which ran.
      if (shadowed && (typeof error !== 'object' || error === null)) return LIVE_TOOL_ERROR_TEXT;
      return notExecutedText(error);
    },
    customDataExtractor: ({ runContext, toolCall }: { runContext: object; toolCall: { callId: string } }) => {
      const completion = existingLedger(runContext)?.byCall.get(toolCall.callId);
      return completion ? { readback: JSON.parse(JSON.stringify(completion)) as Completion } : undefined;
    },
    // biome-ignore lint/suspicious/noExplicitAny: the schema kind is chosen at run time (zod or JSON Schema).
  } as any);
  return created as unknown as AgentTool;
}

/**
 * One tool per action, for an `Agent`'s `tools`. Per-action options (by action name) override the
 * shared ones.
 */
export function agentTools(
  runner: Runner,
  actions: readonly AnyAction[] | Record<string, AnyAction>,
  options: AgentToolOptions & { actions?: Record<string, AgentToolOptions> } = {},
): AgentTool[] {
  checkRunner(runner);
  const list = actionList(actions, options.actions);
  const { actions: perAction, ...shared } = options;
  return list.map((action) => agentTool(runner, action, { ...shared, ...perAction?.[action.name] }));
}
