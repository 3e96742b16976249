/**
 * Accepted-mode actions as MCP tasks (the SDK's experimental tasks, protocol revision 2025-11-25).
 *
 * The tools/call answers at once with a task; readback executes and polls in the background while the
 * task is `working` (its status message is the pending completion's text), and the task's result is the
 * settled completion, shaped like any readback tool result. A task that reaches `completed` only means
 * the call finished: the completion inside says what holds. Results that are tool errors (`failed`,
 * `unknown`) end the task `failed`, as that revision asks for tool results with `isError`; `tasks/result`
 * still returns the whole completion for them.
 */
import type { AnyAction, Completion, RunContext } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import type { Runner } from '../runner/runner.js';
import type { McpToolAnnotations, McpToolResult } from './types.js';

/** Settings for serving accepted-mode actions as MCP tasks. */
export interface McpTaskOptions {
  /**
   * `optional` (default): task-aware clients get a task, other clients a plain call that the SDK
   * resolves by polling the task. `required`: only task-augmented calls are accepted.
   */
  support?: 'optional' | 'required';
  /**
   * Poll interval suggested to clients for `tasks/get`, in ms; default 1000. Fixed per task: SDK 1.x sets a
   * task's `pollInterval` only when the task is created, before readback knows when the work is due.
   * Readback's own background polls do not use it: they follow the runner's schedule (`pollAfter`).
   */
  pollIntervalMs?: number;
  /** How long a finished task's result is kept, in ms, when the client asks for none; default one hour. */
  ttlMs?: number;
}

/** The task store the SDK hands to task handlers (`RequestTaskStore`), as far as readback uses it. */
interface TaskStoreLike {
  createTask(params: { ttl?: number | null; pollInterval?: number }): Promise<{ taskId: string }>;
  getTask(taskId: string): Promise<unknown>;
  getTaskResult(taskId: string): Promise<unknown>;
  updateTaskStatus(taskId: string, status: 'working', statusMessage?: string): Promise<void>;
  storeTaskResult(taskId: string, status: 'completed' | 'failed', result: McpToolResult): Promise<void>;
}

interface TaskExtra {
  taskStore?: TaskStoreLike;
  taskId?: string;
  taskRequestedTtl?: number | null;
}

/** The task registration surface of an SDK 1.x `McpServer` (`server.experimental.tasks`). */
export interface McpTaskServerLike {
  experimental?: {
    tasks?: {
      registerToolTask(
        name: string,
        config: {
          title?: string;
          description?: string;
          inputSchema: unknown;
          outputSchema?: unknown;
          annotations?: McpToolAnnotations;
          execution?: { taskSupport: 'optional' | 'required' };
        },
        // biome-ignore lint/suspicious/noExplicitAny: the SDK's handler types are generic over the schema.
        handler: any,
      ): unknown;
    };
  };
}

/** What `registerTaskTool` needs from `registerActions`. */
export interface TaskToolSpec {
  action: AnyAction;
  config: {
    title?: string;
    description: string;
    inputSchema: unknown;
    outputSchema: unknown;
    annotations: McpToolAnnotations;
  };
  /** The run context for a request (run id, scope, actor), minus the signal. */
  context: (extra: unknown) => Omit<RunContext, 'signal'>;
  toolResult: (completion: Completion) => McpToolResult;
  text: (completion: Completion) => string;
  /** Accepted mode's `wait`: false settles the task with the first (pending) completion. */
  wait: boolean;
}

const HOUR_MS = 3_600_000;

/** Registers one accepted-mode action as a task tool. */
export function registerTaskTool(
  server: McpTaskServerLike,
  runner: Runner,
  spec: TaskToolSpec,
  options: McpTaskOptions,
): void {
  const tasks = server.experimental?.tasks;
  if (typeof tasks?.registerToolTask !== 'function') {
    throw new ReadbackError(
      'invalid_options',
      'this server has no experimental task support (server.experimental.tasks); use @modelcontextprotocol/sdk ^1.32 or turn tasks off',
      'tasks',
    );
  }
  const pollInterval = options.pollIntervalMs ?? 1000;
  tasks.registerToolTask(
    spec.action.name,
    { ...spec.config, execution: { taskSupport: options.support ?? 'optional' } },
    {
      createTask: async (args: unknown, extra: TaskExtra) => {
        const store = requireStore(extra);
        // Derived before any work starts. A scope, actor or run id function that refuses the request still gets
        // a task, settled `failed` at once with the refusal (its text says nothing ran): a thrown error here would
        // reach a task-augmented client as a plain result where a task was expected, which it cannot read.
        let ctx: Omit<RunContext, 'signal'> | undefined;
        let refusal: unknown;
        try {
          ctx = spec.context(extra);
        } catch (error) {
          refusal = error;
        }
        const task = await store.createTask({
          ttl: extra.taskRequestedTtl ?? options.ttlMs ?? HOUR_MS,
          pollInterval,
        });
        if (ctx === undefined) {
          const text = refusal instanceof Error ? refusal.message : String(refusal);
          await store.updateTaskStatus(task.taskId, 'working', text);
          await store.storeTaskResult(task.taskId, 'failed', {
            content: [{ type: 'text', text }],
            isError: true,
          });
          return { task };
        }
        await store.updateTaskStatus(
          task.taskId,
          'working',
          `${spec.action.name}: executing; nothing is verified yet`,
        );
        // The call answers with the task now; the work goes on after this request has been answered,
        // so it must not run under the request's abort signal.
        void settle(runner, spec, store, task.taskId, args, ctx);
        return { task };
      },
      getTask: (_args: unknown, extra: TaskExtra) => requireStore(extra).getTask(extra.taskId as string),
      getTaskResult: (_args: unknown, extra: TaskExtra) =>
        requireStore(extra).getTaskResult(extra.taskId as string),
    },
  );
}

function requireStore(extra: TaskExtra): TaskStoreLike {
  if (!extra.taskStore) {
    throw new ReadbackError(
      'invalid_options',
      'the McpServer has no task store: create it with { taskStore, capabilities: { tasks: { requests: { tools: { call: {} } } } } }',
      'tasks',
    );
  }
  return extra.taskStore;
}

/** Runs the action, reports the pending completion on the task while it polls, then stores the settled one. */
async function settle(
  runner: Runner,
  spec: TaskToolSpec,
  store: TaskStoreLike,
  taskId: string,
  args: unknown,
  ctx: Omit<RunContext, 'signal'>,
): Promise<void> {
  let result: McpToolResult;
  // The last completion seen, so an error while following it up still names the operation to poll.
  let last: Completion | undefined;
  try {
    let completion = await runner.run(spec.action, args, { ...ctx, wait: false });
    last = completion;
    if (spec.wait && completion.status === 'pending' && completion.nextAllowedAction === 'poll') {
      await store.updateTaskStatus(taskId, 'working', spec.text(withoutPollAfter(completion)));
      // One waiting poll: it sleeps until the work is due (`pollAfter`) and then follows the runner's backoff,
      // so the store is read only on that schedule, never on the client's `tasks/get` pace.
      completion = await runner.poll(completion.operationId, {
        wait: true,
        ...(ctx.actor ? { actor: ctx.actor } : {}),
      });
    }
    result = spec.toolResult(completion);
  } catch (error) {
    // Only misuse throws out of the runner; the task still has to end, or its client polls forever.
    // Any value may be thrown (a wrapped runner's undefined too); reading `.message` off it must not
    // turn into an unhandled rejection that takes the server down.
    const text = `[readback error] ${error instanceof Error ? error.message : String(error)}`;
    result = last
      ? {
          ...spec.toolResult(last),
          content: [{ type: 'text', text: `${text}. Last known: ${spec.text(last)}` }],
          isError: true,
        }
      : { content: [{ type: 'text', text }], isError: true };
  }
  try {
    // Storing a result keeps the last status message; without this one, a finished task would still
    // read "pending" in tasks/get, and clients that show only the task status would show a stale word.
    const settledText = result.content[0]?.text;
    await store.updateTaskStatus(taskId, 'working', settledText);
    await store.storeTaskResult(taskId, result.isError ? 'failed' : 'completed', result);
  } catch {
    // The task was cancelled or expired meanwhile; the operation itself stays in the runner's store.
  }
}

// A working task's status message is the pending completion without its due time: readback, not the client,
// polls the operation, the client paces `tasks/get` by the task's `pollInterval`, and the message is not
// rewritten until the task settles, so a due time in it would be stale after readback's first read.
function withoutPollAfter(completion: Completion): Completion {
  if (completion.pollAfter === undefined) return completion;
  const { pollAfter: _dropped, ...rest } = completion;
  return rest;
}
