/**
 * readback/mcp: exposes readback actions as tools on an MCP server: an `McpServer` from
 * `@modelcontextprotocol/sdk` 1.x or from `@modelcontextprotocol/server` 2.x.
 *
 * Each call runs through `runner.run` and answers with the honest Completion: as `structuredContent`
 * (matching the tool's `outputSchema`, also on error results), and as one text item that repeats the
 * status in words, because several clients drop `structuredContent` on errors. `failed` and `unknown`
 * are tool errors (`isError: true`); every other status is a normal result whose text says what holds.
 *
 * Accepted-mode actions can also be served as MCP tasks (`tasks` option, SDK 1.x experimental tasks).
 * Shadow-mode actions (the runner's or the action's `shadow: true`) run through `runner.shadow`: the
 * client gets the live tool's own result, as before readback, and the verdict stays with operators.
 *
 * The SDKs are optional peer dependencies and are not imported here at all (the server is typed by the
 * surface readback uses); the schemas are built with `zod/v4`, which both zod ^3.25 and zod 4 provide.
 */
import * as z from 'zod/v4';
import type { AnyAction, Completion, RunContext, Status } from '../contract/types.js';
import { STATUSES } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import { actionList, checkRunner } from '../integrations/options.js';
import {
  CONTEXT_REFUSED_TEXT,
  completionText,
  isErrorStatus,
  liveResponse,
  notRunText,
  rawText,
} from '../integrations/text.js';
import { prevalidated } from '../runner/prevalidated.js';
import type { Runner } from '../runner/runner.js';
import { type McpTaskOptions, type McpTaskServerLike, registerTaskTool } from './tasks.js';
import type { McpToolAnnotations, McpToolResult } from './types.js';

export { completionText, isErrorStatus };
export type { McpTaskOptions, McpToolAnnotations, McpToolResult };

/**
 * The parts of a tool call's request context that readback reads: SDK 1.x passes them as is
 * (`RequestHandlerExtra`); a 2.x `ServerContext` is mapped onto this shape.
 */
export interface McpRequestExtra {
  signal: AbortSignal;
  sessionId?: string | undefined;
  requestId: string | number;
  authInfo?: { clientId?: string } | undefined;
}

/** Per-action settings for `registerActions`. */
export interface McpActionOptions {
  /** Accepted mode: wait within the poll budget (default true) or answer `pending` at once. */
  wait?: boolean;
  /** `destructiveHint`; default true (a state-changing tool may overwrite or remove). */
  destructive?: boolean;
  /** Display title for the tool. */
  title?: string;
  /**
   * Accepted-mode actions only: serve calls as MCP tasks (SDK 1.x experimental tasks). The server must
   * be created with a `taskStore` and `capabilities.tasks.requests.tools.call`. Default false.
   */
  tasks?: boolean | McpTaskOptions;
}

/** Options for `registerActions`. */
export interface McpRegisterOptions extends McpActionOptions {
  /** Scope given to every run (e.g. `{ tenant: 'acme' }`), or derived per request. */
  scope?: Record<string, string> | ((extra: McpRequestExtra) => Record<string, string>);
  /**
   * The run id for a call. Default: `mcp:<sessionId>` when the transport has sessions (Streamable HTTP),
   * else `mcp:<connection>`, one random id per `registerActions` call (a stdio or in-memory server
   * serves one connection). Calls in one run that repeat the same input share an idempotency key, so
   * a model that retries a call gets the same operation back instead of a second effect.
   */
  runId?: (extra: McpRequestExtra) => string;
  /** The actor for authorization and records; default the authenticated client id, if any. */
  actor?: (extra: McpRequestExtra) => string | undefined;
  /** Settings per action name; they override the global `wait`, `destructive` and `tasks`. */
  actions?: Record<string, McpActionOptions>;
  /**
   * Who validates a client's arguments against a schema the SDK can list (a zod 4 schema on SDK 1.x, one with
   * Standard JSON Schema on SDK 2.x). `'readback'` (default): the SDK lists exactly the JSON Schema it derives
   * from the schema but accepts any arguments, so every call reaches
   * the runner, which validates it once and records an invalid one (`tool.selected` with `valid: false` and its
   * issues) as a `failed`/`invalid_input` completion saying what was wrong and where. `'sdk'`: the SDK validates
   * first and rejects an invalid call with its own error result, which readback never sees; the runner takes a
   * valid call's parsed arguments as they are (see `PREVALIDATED`). On SDK 1.x a zod 3 schema always takes the `'sdk'` path; on SDK 2.x any
   * schema the SDK can list (one with Standard JSON Schema) takes either.
   */
  inputValidation?: 'readback' | 'sdk';
}

const CheckSchema = z.looseObject({
  name: z.string(),
  pass: z.boolean(),
  expected: z.unknown().optional(),
  observed: z.unknown().optional(),
});

/**
 * The Completion as a zod object: the tool's `outputSchema`. Loose, so a client validating with an
 * older copy of this schema accepts completions that carry fields added later.
 */
export const completionSchema = z.looseObject({
  status: z.enum(STATUSES as [Status, ...Status[]]),
  action: z.string(),
  target: z.string(),
  operationId: z.string(),
  idempotencyKey: z.string(),
  attempt: z.number(),
  postcondition: z.string(),
  mode: z.enum(['committed', 'accepted', 'optimistic']),
  observedAt: z.string().optional(),
  evidence: z.record(z.string(), z.unknown()).optional(),
  checks: z.array(CheckSchema),
  units: z
    .looseObject({
      required: z.number(),
      passed: z.number(),
      failed: z.number(),
      failedTargets: z.array(z.string()),
    })
    .optional(),
  errorCode: z.string().optional(),
  reason: z.string().optional(),
  nextAllowedAction: z.enum(['none', 'poll', 'repair', 'ask_user', 'retry']),
  pollAfter: z.string().optional(),
  safeToRepeat: z.union([z.boolean(), z.literal('unknown')]),
  message: z.string(),
});

/** Input schema for actions whose schema the SDK cannot list: any object; readback validates it on the run. */
const passthroughInput = z.looseObject({});

/** What SDK 1.x parses a zod 4 schema with, and, for an object, converts with `z.toJSONSchema`. */
type Zod4 = z.ZodType & { _zod: { def: { type?: string; shape?: unknown } } };

/**
 * The schema SDK 1.x is given for a zod 4 action schema when readback validates: it parses every argument
 * object as is, yet `tools/list` shows what the SDK derives from the action's schema. SDK 1.x lists a zod
 * object as `z.toJSONSchema(schema, { target: 'draft-7', io: 'input' })` and anything else as an empty
 * object (`normalizeObjectSchema` and `toJsonSchemaCompat` in its server/zod-compat.js and
 * zod-json-schema-compat.js), so an object is stood in for by an object that checks nothing, carrying that
 * JSON Schema as zod metadata (which `toJSONSchema` merges over its own output), and anything else by
 * `z.unknown()`. (`schema.catch(...)` would not do: the SDK lists a non-object as an empty object.)
 * Undefined when the action's schema has no JSON Schema (the SDK would fail to list it too): the SDK keeps it.
 */
function acceptingInput(schema: Zod4): z.ZodType | undefined {
  const def = schema._zod.def;
  if (def.type !== 'object' && def.shape === undefined) return z.unknown();
  let listed: Record<string, unknown>;
  try {
    const { $schema: _draft, ...json } = z.toJSONSchema(schema, { target: 'draft-7', io: 'input' });
    listed = json;
  } catch {
    return undefined;
  }
  // A loose object lists `additionalProperties: {}`, which metadata can replace but not remove: a schema that
  // lists none strips unknown keys, so its stand-in keeps the schema's own keys (not the listed ones, which a
  // root `.meta({ id })` moves behind a `$ref`) and strips the rest, as it would. Each key is optional: zod 4
  // requires a `z.unknown()` key, which would refuse a call that leaves out an optional or defaulted field
  // before readback sees it, and list every field as required when none is.
  const keys = Object.keys((def.shape as Record<string, unknown> | undefined) ?? {});
  const base =
    'additionalProperties' in listed
      ? z.looseObject({})
      : z.object(Object.fromEntries(keys.map((key) => [key, z.unknown().optional()])));
  // The SDK reads this metadata through zod's global registry, which zod 4 keeps on `globalThis` so that
  // separate copies of zod (the SDK's, readback's, the app's) share it.
  return base.meta(listed);
}

/** The Standard JSON Schema side of a schema (`~standard.jsonSchema`), which SDK 2.x lists tools by. */
interface JsonSchemaSide {
  input(options: unknown): unknown;
  output(options: unknown): unknown;
}

/**
 * The schema SDK 2.x is given for an action schema when readback validates: a Standard Schema whose JSON Schema is
 * the action schema's own (the SDK lists a tool by `~standard.jsonSchema.input`, so `tools/list` is unchanged) and
 * whose `validate` accepts every value as it is, so every call reaches the runner, which validates it once.
 */
function acceptingStandard(schema: unknown): unknown {
  const side = (schema as { '~standard': { jsonSchema: JsonSchemaSide } })['~standard'].jsonSchema;
  return {
    '~standard': {
      version: 1,
      vendor: 'readback',
      validate: (value: unknown) => ({ value }),
      jsonSchema: {
        input: (options: unknown) => side.input(options),
        output: (options: unknown) => side.output(options),
      },
    },
  };
}

/** True when the schema is a zod schema the SDK can list and validate (zod 4, or zod 3.25+). */
function isZod(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return false;
  if ('_zod' in schema) return true;
  const std = (schema as { '~standard'?: { vendor?: unknown } })['~standard'];
  return std?.vendor === 'zod' && '_def' in schema;
}

/** True when the schema also describes itself as JSON Schema (Standard JSON Schema), as SDK 2.x requires. */
function hasJsonSchema(schema: unknown): boolean {
  const std = (schema as { '~standard'?: { jsonSchema?: unknown } } | null)?.['~standard'];
  return typeof std?.jsonSchema === 'object' && std.jsonSchema !== null;
}

/** The MCP tool result for a completion; `structuredContent` is the completion as plain JSON. */
export function toolResult(completion: Completion): McpToolResult {
  return {
    content: [{ type: 'text', text: completionText(completion) }],
    structuredContent: JSON.parse(JSON.stringify(completion)) as Record<string, unknown>,
    isError: isErrorStatus(completion.status),
  };
}

/**
 * A live tool's own result as an MCP tool result, for shadow mode: a `CallToolResult` (an object with a
 * `content` array) passes through unchanged; anything else becomes one text item (a string as is, else
 * JSON). Readback's markers are unwrapped to the provider's response; a `rejected` one is a tool error.
 */
export function liveToolResult(result: unknown): McpToolResult {
  const { value, refused } = liveResponse(result);
  const own = value as { content?: unknown } | null;
  if (typeof own === 'object' && own !== null && Array.isArray(own.content)) return value as McpToolResult;
  return { content: [{ type: 'text', text: rawText(value) }], isError: refused };
}

/** The annotations for an action: hints that tell the truth about a state-changing tool. */
export function toolAnnotations(action: AnyAction, options: McpActionOptions = {}): McpToolAnnotations {
  return {
    ...(options.title !== undefined ? { title: options.title } : {}),
    readOnlyHint: false,
    destructiveHint: options.destructive ?? true,
    idempotentHint: action.safeToRepeat === true,
    openWorldHint: true,
  };
}

/** A tool handler as readback registers it: arguments plus the SDK's request context. */
type ToolHandler = (args: unknown, extra: unknown) => Promise<McpToolResult>;

/**
 * The server surface `registerActions` uses. An `McpServer` from `@modelcontextprotocol/sdk` 1.x or from
 * `@modelcontextprotocol/server` 2.x satisfies it.
 */
export interface McpServerLike {
  registerTool(
    name: string,
    config: {
      title?: string;
      description?: string;
      // biome-ignore lint/suspicious/noExplicitAny: each SDK line types its schemas differently.
      inputSchema?: any;
      // biome-ignore lint/suspicious/noExplicitAny: as above.
      outputSchema?: any;
      annotations?: McpToolAnnotations;
    },
    // biome-ignore lint/suspicious/noExplicitAny: the SDKs type the callback by the schema given.
    cb: any,
  ): unknown;
}

/** A 2.x `ServerContext` carries the request under `mcpReq`; 1.x passes `RequestHandlerExtra` flat. */
function requestExtra(raw: unknown): McpRequestExtra {
  const v2 = raw as {
    sessionId?: string;
    mcpReq?: { id: string | number; signal: AbortSignal };
    http?: { authInfo?: { clientId?: string } };
  };
  if (v2.mcpReq) {
    return {
      signal: v2.mcpReq.signal,
      requestId: v2.mcpReq.id,
      sessionId: v2.sessionId,
      authInfo: v2.http?.authInfo,
    };
  }
  return raw as McpRequestExtra;
}

/**
 * Registers one tool per action on an `McpServer`. Tool name = action name; description = the
 * action's description plus its postcondition. Resolves every call through `runner.run`.
 *
 * Input schemas: a zod 4 action schema on SDK 1.x, or on SDK 2.x any Standard Schema that also provides
 * JSON Schema, is listed in `tools/list` as the SDK derives it, and readback validates the arguments
 * (`inputValidation`), so invalid arguments come back as a `failed` completion with `errorCode:
 * invalid_input`. With `inputValidation: 'sdk'`, and for a zod 3 schema on SDK 1.x, the schema is handed to
 * the SDK as is (listed, and invalid arguments rejected by the SDK before anything runs). Any other schema
 * is listed as an open object and validated by readback.
 */
export function registerActions(
  server: McpServerLike,
  runner: Runner,
  actions: readonly AnyAction[] | Record<string, AnyAction>,
  options: McpRegisterOptions = {},
): void {
  if (typeof (server as Partial<McpServerLike> | null)?.registerTool !== 'function') {
    throw new ReadbackError(
      'invalid_options',
      'expected an McpServer from @modelcontextprotocol/sdk 1.x or @modelcontextprotocol/server 2.x',
      'server',
    );
  }
  checkRunner(runner);
  const validation = options.inputValidation ?? 'readback';
  if (validation !== 'readback' && validation !== 'sdk') {
    throw new ReadbackError('invalid_options', "must be 'readback' or 'sdk'", 'inputValidation');
  }
  // Every argument is checked before the first tool is registered, so a mistake leaves the server as it was.
  const list = actionList(actions, options.actions);
  const connection = `mcp:${crypto.randomUUID()}`;
  // SDK 2.x lists any Standard Schema that carries JSON Schema; 1.x converts zod schemas itself.
  const v2 = typeof (server as { toolInputSchemaJson?: unknown }).toolInputSchemaJson === 'function';
  const resolveContext = (raw: unknown, own: McpActionOptions): RunContext => {
    const extra = requestExtra(raw);
    const scope = typeof options.scope === 'function' ? options.scope(extra) : options.scope;
    const actor = options.actor ? options.actor(extra) : extra.authInfo?.clientId;
    return {
      runId: options.runId ? options.runId(extra) : extra.sessionId ? `mcp:${extra.sessionId}` : connection,
      signal: extra.signal,
      ...(scope ? { scope } : {}),
      ...(actor ? { actor } : {}),
      ...(own.wait !== undefined ? { wait: own.wait } : {}),
    };
  };
  // A scope, actor or run id function that throws refuses the call before anything runs. Both SDKs show a
  // handler's error message as the tool error's text: the raw one could read as a complaint about the
  // arguments, so the client is told nothing ran instead, and the option's own error is the `cause`.
  const context = (raw: unknown, own: McpActionOptions): RunContext => {
    try {
      return resolveContext(raw, own);
    } catch (error) {
      throw new Error(CONTEXT_REFUSED_TEXT, { cause: error });
    }
  };
  // Task settings are decided before any tool is registered too: a refused one leaves no tool behind.
  for (const action of list) runner.register(action);
  const taskOf = new Map<AnyAction, McpTaskOptions | undefined>();
  for (const action of list) {
    if (runner.inShadow(action)) continue;
    const own = options.actions?.[action.name]?.tasks;
    taskOf.set(action, taskSettings(action, own ?? options.tasks, own !== undefined));
  }
  // The SDK refuses a name it already serves with a plain Error; say which action collided, as misuse.
  const add = (action: AnyAction, register: () => unknown) => {
    try {
      register();
    } catch (error) {
      if (error instanceof ReadbackError) throw error;
      throw new ReadbackError(
        'invalid_options',
        `the server refused the tool "${action.name}": ${(error as Error)?.message ?? String(error)}`,
        'action.name',
      );
    }
  };
  for (const action of list) {
    const own = { ...options, ...options.actions?.[action.name] };
    const usable = v2 ? hasJsonSchema(action.input) : isZod(action.input);
    const accepting =
      !usable || validation !== 'readback'
        ? undefined
        : v2
          ? acceptingStandard(action.input)
          : '_zod' in action.input
            ? acceptingInput(action.input as unknown as Zod4)
            : undefined;
    // The SDK was handed the action's own schema, so the arguments a handler gets are its output: taken as they are.
    const sdkValidates = usable && accepting === undefined;
    const callContext = (raw: unknown) =>
      sdkValidates ? prevalidated(context(raw, own)) : context(raw, own);
    const config = {
      ...(own.title !== undefined ? { title: own.title } : {}),
      description: `${action.description}\nPostcondition (checked by reading back the state): ${action.postcondition}`,
      inputSchema: accepting ?? (usable ? (action.input as unknown) : passthroughInput),
      outputSchema: completionSchema,
      annotations: toolAnnotations(action, own),
    };
    if (runner.inShadow(action)) {
      // No outputSchema: the client gets whatever the live tool returned, not a completion.
      const { outputSchema: _completion, ...shadowConfig } = config;
      const handler: ToolHandler = async (args, extra) => {
        const { executed, result, completion } = await runner.shadow(action, args, callContext(extra));
        return executed
          ? liveToolResult(result)
          : { content: [{ type: 'text', text: notRunText(completion) }], isError: true };
      };
      add(action, () => server.registerTool(action.name, shadowConfig, handler));
      continue;
    }
    const task = taskOf.get(action);
    if (task) {
      add(action, () =>
        registerTaskTool(
          server as McpTaskServerLike,
          runner,
          {
            action,
            config,
            context: (raw) => {
              const { signal: _ignored, ...ctx } = callContext(raw);
              return ctx;
            },
            toolResult,
            text: completionText,
            wait: own.wait !== false,
          },
          task,
        ),
      );
      continue;
    }
    const handler: ToolHandler = async (args, extra) =>
      toolResult(await runner.run(action, args, callContext(extra)));
    add(action, () => server.registerTool(action.name, config, handler));
  }
}

/** The task settings for an action, or undefined when it is served as a plain tool. */
function taskSettings(
  action: AnyAction,
  setting: boolean | McpTaskOptions | undefined,
  perAction: boolean,
): McpTaskOptions | undefined {
  if (setting === undefined || setting === false) return undefined;
  if (action.mode !== 'accepted') {
    // A global `tasks` covers the accepted-mode actions; naming a committed action is a mistake.
    if (!perAction) return undefined;
    throw new ReadbackError(
      'invalid_options',
      `only accepted-mode actions run as MCP tasks; "${action.name}" is ${action.mode}`,
      `actions.${action.name}.tasks`,
    );
  }
  return setting === true ? {} : setting;
}
