/**
 * readback/mcp: exposes readback actions as tools on an MCP server (`@modelcontextprotocol/sdk` 1.x).
 *
 * Each call runs through `runner.run` and answers with the honest Completion: as `structuredContent`
 * (matching the tool's `outputSchema`, also on error results), and as one text item that repeats the
 * status in words, because several clients drop `structuredContent` on errors. `failed` and `unknown`
 * are tool errors (`isError: true`); every other status is a normal result whose text says what holds.
 *
 * The SDK is an optional peer dependency, imported here for its types only; the schemas are built with
 * `zod/v4`, which both zod ^3.25 and zod 4 provide (the SDK requires one of them).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/v4';
import type { AnyAction, Completion, RunContext, Status } from '../contract/types.js';
import { STATUSES } from '../contract/types.js';
import { completionText, isErrorStatus } from '../integrations/text.js';
import type { Runner } from '../runner/runner.js';

export { completionText, isErrorStatus };

/** The parts of the SDK's `RequestHandlerExtra` that readback reads. */
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
  /** Settings per action name; they override the global `wait` and `destructive`. */
  actions?: Record<string, McpActionOptions>;
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
  safeToRepeat: z.union([z.boolean(), z.literal('unknown')]),
  message: z.string(),
});

/** Input schema for actions whose schema is not zod: any object; readback validates it on the run. */
const passthroughInput = z.looseObject({});

/** True when the schema is a zod schema the SDK can list and validate (zod 4, or zod 3.25+). */
function isZod(schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return false;
  if ('_zod' in schema) return true;
  const std = (schema as { '~standard'?: { vendor?: unknown } })['~standard'];
  return std?.vendor === 'zod' && '_def' in schema;
}

/** The MCP tool result for a completion; `structuredContent` is the completion as plain JSON. */
export function toolResult(completion: Completion): CallToolResult {
  return {
    content: [{ type: 'text', text: completionText(completion) }],
    structuredContent: JSON.parse(JSON.stringify(completion)) as Record<string, unknown>,
    isError: isErrorStatus(completion.status),
  };
}

/** The annotations for an action: hints that tell the truth about a state-changing tool. */
export function toolAnnotations(action: AnyAction, options: McpActionOptions = {}): ToolAnnotations {
  return {
    ...(options.title !== undefined ? { title: options.title } : {}),
    readOnlyHint: false,
    destructiveHint: options.destructive ?? true,
    idempotentHint: action.safeToRepeat === true,
    openWorldHint: true,
  };
}

/** The server surface `registerActions` uses; an `McpServer` from the SDK satisfies it. */
export type McpServerLike = Pick<McpServer, 'registerTool'>;

/**
 * Registers one tool per action on an `McpServer`. Tool name = action name; description = the
 * action's description plus its postcondition. Resolves every call through `runner.run`.
 *
 * Input schemas: a zod action schema is handed to the SDK as is (it is listed in `tools/list`, and
 * the SDK rejects invalid arguments before anything runs). Any other Standard Schema is listed as an
 * open object and validated by readback, so invalid arguments come back as a `failed` completion
 * with `errorCode: invalid_input`.
 */
export function registerActions(
  server: McpServerLike,
  runner: Runner,
  actions: readonly AnyAction[] | Record<string, AnyAction>,
  options: McpRegisterOptions = {},
): void {
  const list = Array.isArray(actions) ? actions : Object.values(actions);
  const connection = `mcp:${crypto.randomUUID()}`;
  for (const action of list) {
    runner.register(action);
    const own = { ...options, ...options.actions?.[action.name] };
    const inputSchema = isZod(action.input) ? (action.input as unknown as z.ZodType) : passthroughInput;
    server.registerTool(
      action.name,
      {
        ...(own.title !== undefined ? { title: own.title } : {}),
        description: `${action.description}\nPostcondition (checked by reading back the state): ${action.postcondition}`,
        inputSchema,
        outputSchema: completionSchema,
        annotations: toolAnnotations(action, own),
      },
      async (args: unknown, extra: McpRequestExtra) => {
        const scope = typeof options.scope === 'function' ? options.scope(extra) : options.scope;
        const actor = options.actor ? options.actor(extra) : extra.authInfo?.clientId;
        const ctx: RunContext = {
          runId: options.runId
            ? options.runId(extra)
            : extra.sessionId
              ? `mcp:${extra.sessionId}`
              : connection,
          signal: extra.signal,
          ...(scope ? { scope } : {}),
          ...(actor ? { actor } : {}),
          ...(own.wait !== undefined ? { wait: own.wait } : {}),
        };
        return toolResult(await runner.run(action, args, ctx));
      },
    );
  }
}
