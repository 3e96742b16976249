import { type Clock, systemClock } from '../clock.js';
import { isAction } from '../contract/define.js';
import type { Action, AnyAction, Completion, RunContext } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import { newOperationId } from '../ids.js';
import { type Validated, validateInput } from '../schema.js';
import { memoryStore } from '../store/memory.js';
import { isStoreMisuse } from '../store/records.js';
import type { OperationRecord, OperationStore } from '../store/types.js';
import { type ReviewDecision, recordDecision } from './approval.js';
import { authorize, checkContext, conflict, idempotencyKeyFor, intentOf } from './call-checks.js';
import { Drive, startingMove } from './drive.js';
import { parkedDue } from './follow.js';
import { checkPollOptions, checkRunnerOptions, checkTraceOptions } from './options.js';
import { type Outcome, toCompletion } from './outcome.js';
import { type MaybePrevalidated, PREVALIDATED } from './prevalidated.js';
import { describeError } from './readback.js';
import { type ReconcileOptions, type ReconcileReport, reconcileLoop } from './reconcile.js';
import {
  isShadowed,
  isShadowKey,
  runUnrecorded,
  type ShadowResult,
  ShadowState,
  shadowKey,
} from './shadow.js';
import { NEVER_ABORTED } from './timeout.js';
import { type RunTrace, settle } from './trace.js';
import { type TraceOptions, Tracer } from './tracer.js';

// How long a reserved record may sit in `requested` (its baseline read runs then) before a reconciler
// treats its run as dead; a live run that is merely slow still wins, because its move to executing is a CAS.
const REQUESTED_GRACE_MS = 30_000;

/** Options for `createRunner`; every field has a safe default. */
export interface RunnerOptions {
  /** Where operation records live; defaults to an in-memory store. */
  store?: OperationStore;
  clock?: Clock;
  /** Actions known up front, so `poll` can resume their operations after a restart. */
  actions?: AnyAction[];
  /** Re-executions allowed after an ambiguous attempt is proven absent (only for safe-to-repeat actions). */
  retryBudget?: number;
  /** Source of randomness for backoff jitter; injectable for deterministic tests. */
  random?: () => number;
  /** Operation id generator; by default `newOperationId` (`op_` and a time-ordered UUIDv7). */
  newId?: () => string;
  /** The run record: typed events for every step, redacted, sent to these sinks. Off (and free) by default. */
  trace?: TraceOptions;
  /**
   * Shadow mode for every action: calls go through `runner.shadow`, which returns the live tool's own result
   * unchanged and records whether its claim matched the verified status (never shown to users as proof).
   * The claim is read from the raw result as the trace reads it (`trace.claimOf` when given).
   */
  shadow?: boolean;
}

/** The context of one `runner.run` call: the run context plus facts recorded in the trace. */
export interface RunOptions extends RunContext {
  /** The agent turn this tool call belongs to. */
  turn?: number;
  tenant?: string;
  /** Deployment environment (`production`, `staging`, …). */
  environment?: string;
  /** The names of the tools the model could choose from when it made this call. */
  toolsExposed?: string[];
  /** The model's tool call id (`gen_ai.tool.call.id`); one is generated when absent. */
  toolCallId?: string;
}

/** Options for `runner.poll`. */
export interface PollOptions {
  signal?: AbortSignal;
  /**
   * Wait within the remaining poll budget instead of reading once; parked work is first waited for until it
   * is due (`pollAfter`). Without it, a poll of parked work not yet due returns its pending completion unread.
   */
  wait?: boolean;
  actor?: string;
}

/** Executes actions, reads back their effects and returns honest completions. */
export interface Runner {
  readonly store: OperationStore;
  readonly clock: Clock;
  /** Runs one action call; resolves to a Completion for every outcome, throws only on misuse. */
  run<I, O>(action: Action<I, O>, input: unknown, ctx: RunOptions): Promise<Completion>;
  /**
   * Runs a shadow-mode action call: resolves to the tool's own result, unchanged, beside an operator-only
   * completion; an error the tool threw is re-thrown unchanged once the record is written. Readback never
   * gates, deduplicates, repeats or waits on the call; accepted work is left `pending` for the reconciler.
   */
  shadow<I, O>(action: Action<I, O>, input: unknown, ctx: RunOptions): Promise<ShadowResult>;
  /**
   * Advances an open operation (reads back, never re-executes unsafe work); settled ones return as recorded,
   * and parked accepted work polled before its `pollAfter` returns as stored, without a read (see PollOptions).
   */
  poll(operationId: string, options?: PollOptions): Promise<Completion>;
  /** Records a reviewer's approval of an operation awaiting it; the next run or poll executes it once. */
  approve(operationId: string, decision: ReviewDecision): Promise<Completion>;
  /** Records a reviewer's rejection: the operation settles `failed` and nothing is executed. */
  reject(operationId: string, decision: ReviewDecision): Promise<Completion>;
  /** Claims due operations with leases and drives them on; see `ReconcileOptions`. */
  reconcile(options?: ReconcileOptions): Promise<ReconcileReport>;
  /** Makes an action known to `poll`; `run` registers actions itself. */
  register(action: AnyAction): void;
  /** The registered action with this name, if any. */
  action(name: string): AnyAction | undefined;
  /** True when calls of this action must go through `shadow` (the runner's or the action's `shadow: true`). */
  inShadow(action: AnyAction): boolean;
}

/** Creates a runner over a store and a clock. */
export function createRunner(options: RunnerOptions = {}): Runner {
  checkRunnerOptions(options);
  const store = options.store ?? memoryStore();
  const clock = options.clock ?? systemClock;
  const retryBudget = options.retryBudget ?? 1;
  if (!Number.isInteger(retryBudget) || retryBudget < 0) {
    throw new ReadbackError('invalid_options', 'must be a whole number ≥ 0', 'retryBudget');
  }
  const random = options.random ?? Math.random;
  const newId = options.newId ?? (() => newOperationId());
  const tracer = createTracer(options.trace, clock);
  const runnerShadow = options.shadow === true;
  const env = { store, clock, random, retryBudget, tracer };
  const registry = new Map<string, AnyAction>();
  // Drives in progress in this process, by idempotency key and by operation id, so duplicates join them.
  const byKey = new Map<string, { id: string; fingerprint: string; done: Promise<Completion> }>();
  const byId = new Map<string, Promise<Completion>>();

  function register(action: AnyAction): void {
    if (!isAction(action)) {
      throw new ReadbackError('invalid_options', 'expected an action made by defineAction()', 'action');
    }
    const known = registry.get(action.name);
    if (known && known !== action) {
      throw new ReadbackError(
        'invalid_options',
        `two different actions are named "${action.name}"`,
        'action.name',
      );
    }
    registry.set(action.name, action);
  }
  for (const action of options.actions ?? []) register(action);

  function track(id: string, key: string | undefined, fingerprint: string, done: Promise<Completion>) {
    byId.set(id, done);
    if (key) byKey.set(key, { id, fingerprint, done });
    const forget = () => {
      byId.delete(id);
      if (key && byKey.get(key)?.done === done) byKey.delete(key);
    };
    // then(f, f) rather than finally(): finally() would re-raise a rejection nobody listens to.
    done.then(forget, forget);
    return done;
  }

  function run<I, O>(action: Action<I, O>, rawInput: unknown, ctx: RunOptions): Promise<Completion> {
    if (isAction(action) && isShadowed(runnerShadow, action as AnyAction)) {
      const where = runnerShadow ? 'shadow' : 'action.shadow';
      return Promise.reject(
        new ReadbackError(
          'invalid_options',
          `"${action.name}" runs in shadow mode: call runner.shadow() so the agent gets the tool's own result`,
          where,
        ),
      );
    }
    return start(action, rawInput, ctx, undefined);
  }

  function shadow<I, O>(action: Action<I, O>, rawInput: unknown, ctx: RunOptions): Promise<ShadowResult> {
    if (isAction(action) && !isShadowed(runnerShadow, action as AnyAction)) {
      return Promise.reject(
        new ReadbackError(
          'invalid_options',
          `"${action.name}" is not in shadow mode: set shadow: true on the action or the runner, or call run()`,
          'action.shadow',
        ),
      );
    }
    const state = new ShadowState('none', options.trace?.claimOf);
    return start(action, rawInput, ctx, state).then(
      (completion) => state.settle(completion),
      (error: unknown) => {
        // Readback failed after the live tool ran (its store closed, say): the agent still gets what the tool
        // produced, as it would without readback, and the operator an unknown outcome naming the failure.
        const at = state.ranUnder;
        if (at === undefined) throw error;
        const outcome: Outcome = {
          target: at.target,
          operationId: at.id,
          idempotencyKey: at.idempotencyKey,
          attempt: at.attempt,
          nothingExecuted: false,
          status: 'unknown',
          errorCode: 'store_unavailable',
          reason: `readback could not finish the record: ${describeError(error)}`,
          next: 'ask_user',
        };
        return state.settle(toCompletion(outcome, action as AnyAction));
      },
    );
  }

  function start<I, O>(
    action: Action<I, O>,
    rawInput: unknown,
    ctx: RunOptions,
    shadowState: ShadowState | undefined,
  ): Promise<Completion> {
    if (!tracer) return decide(action, rawInput, ctx, undefined, shadowState);
    let t: RunTrace;
    try {
      // Misuse is reported before the call is recorded, and as a rejection like every other run error.
      register(action as AnyAction);
      checkContext(ctx);
      // One literal of one shape; the trace skips the facts left undefined.
      t = tracer.begin(action, {
        runId: ctx.runId,
        entry: 'run',
        turn: ctx.turn,
        tenant: ctx.tenant,
        actor: ctx.actor,
        environment: ctx.environment,
        scope: ctx.scope,
        toolsExposed: ctx.toolsExposed,
        toolCallId: ctx.toolCallId,
      });
    } catch (error) {
      return Promise.reject(error);
    }
    // No sink wants anything more from this call (an OpenTelemetry span nobody records, say): it runs untraced.
    if (t.wantsNothing()) return decide(action, rawInput, ctx, undefined, shadowState, true);
    return traced(t, decide(action, rawInput, ctx, t, shadowState, true), shadowState);
  }

  // `checked`: the caller already registered the action and checked the context.
  async function decide<I, O>(
    action: Action<I, O>,
    rawInput: unknown,
    ctx: RunOptions,
    t: RunTrace | undefined,
    shadowState?: ShadowState,
    checked = false,
  ): Promise<Completion> {
    if (!checked) {
      register(action as AnyAction);
      checkContext(ctx);
    }
    const scope = ctx.scope ?? {};
    const signal = ctx.signal ?? NEVER_ABORTED;
    const early = (partial: Partial<Outcome> & Pick<Outcome, 'status'>, target = action.name) => {
      const completion = toCompletion(
        { target, operationId: newId(), idempotencyKey: '', attempt: 0, nothingExecuted: true, ...partial },
        action as AnyAction,
      );
      return shadowState ? shadowState.mark(completion) : completion;
    };

    if (signal.aborted)
      return early({ status: 'failed', errorCode: 'aborted', reason: 'aborted before start' });
    let validated: Validated<I>;
    try {
      // An integration's framework already parsed the arguments with this schema: parsing its output again would
      // run the schema's transforms twice.
      const result = (ctx as MaybePrevalidated)[PREVALIDATED]
        ? { ok: true as const, value: rawInput as I }
        : validateInput(action.input, rawInput);
      validated = result instanceof Promise ? await result : result;
    } catch (error) {
      t?.selected(false, rawInput, { issues: ['validation threw'] });
      return early({
        status: 'failed',
        errorCode: 'invalid_input',
        reason: `validation threw: ${describeError(error)}`,
      });
    }
    if (!validated.ok) {
      t?.selected(false, rawInput, { issues: validated.issues });
      return early({ status: 'failed', errorCode: 'invalid_input', reason: validated.issues.join('; ') });
    }
    const input = validated.value;
    let target: string;
    try {
      target = action.target(input);
      if (typeof target !== 'string' || target === '')
        throw new Error('target() must return a non-empty string');
    } catch (error) {
      t?.selected(true, input);
      return early({ status: 'failed', errorCode: 'invalid_target', reason: describeError(error) });
    }
    const intent = intentOf(action.name, target, input, scope, t?.hashesArguments() === true);
    t?.selected(true, input, { target, argsHash: 'fingerprint' in intent ? intent.argsHash : null });
    // A live tool under shadow runs as it did before readback: no authorization gate of readback's own.
    const denial = shadowState || !action.authorize ? undefined : await authorize(action, input, ctx);
    t?.permission(action.authorize !== undefined, denial);
    if (denial) return early({ status: 'failed', errorCode: 'not_authorized', reason: denial }, target);
    if ('unusable' in intent) {
      return early({ status: 'failed', errorCode: 'invalid_input', reason: intent.unusable }, target);
    }
    const { fingerprint } = intent;
    // Shadow calls are never joined or deduplicated: the live tool runs every time it did before.
    const shadowId = shadowState ? newId() : undefined;
    const key = shadowId ? shadowKey(shadowId) : idempotencyKeyFor(action, input, ctx, fingerprint);
    if (key === undefined) {
      return early(
        { status: 'failed', errorCode: 'invalid_input', reason: 'idempotencyKey() must return a string' },
        target,
      );
    }
    // The prefix marks a record as shadow for whoever drives it later; a normal run must not borrow it.
    if (!shadowState && isShadowKey(key)) {
      const reason = `idempotency key "${key}" is reserved for shadow mode (it starts with "shadow:")`;
      return early({ status: 'failed', errorCode: 'invalid_input', reason }, target);
    }

    const joined = byKey.get(key);
    if (joined) {
      if (joined.fingerprint === fingerprint) {
        t?.reserved({ id: joined.id, idempotencyKey: key, fingerprint }, 'joined');
        return join(joined.done, signal, joined.id, action as AnyAction);
      }
      return conflict(action as AnyAction, target, key, (await store.getByKey(key))?.id ?? newId());
    }
    const id = shadowId ?? newId();
    const now = clock.now();
    // Nothing runs between reserving and executing most calls: the store may write both in one commit. Not once
    // the caller has aborted, which the drive must see with the record still `requested` (nothing ran).
    const first = signal.aborted
      ? undefined
      : startingMove(action as AnyAction, now, ctx.actor ?? null, shadowState !== undefined);
    // A store that throws synchronously is handled like one that rejects.
    const reservation = settle(() =>
      store.reserve(
        {
          id,
          action: action.name,
          target,
          scope,
          fingerprint,
          idempotencyKey: key,
          runId: ctx.runId,
          actor: ctx.actor ?? null,
          input,
          requestedAt: now,
          nextPollAt: now + action.verifyTimeoutMs + REQUESTED_GRACE_MS,
        },
        {
          type: 'reserved',
          at: now,
          from: null,
          to: 'requested',
          status: null,
          actor: ctx.actor ?? null,
          attempt: 0,
        },
        first,
      ),
    );
    const done = reservation.then(
      ({ record, created }) => {
        if (record.fingerprint !== fingerprint) return conflict(action as AnyAction, target, key, record.id);
        t?.reserved(record, created ? 'created' : 'existing');
        if (!created) return resume(record, { signal, wait: ctx.wait !== false, actor: ctx.actor, trace: t });
        const drive = new Drive(env, action as AnyAction, record, {
          signal,
          actor: ctx.actor,
          trace: t,
          shadow: shadowState,
        });
        // Shadow never holds the live tool's result back to poll accepted work: the reconciler follows it.
        drive.runWait = ctx.wait !== false && !shadowState;
        const started =
          first !== undefined && record.lifecycle === 'executing' ? drive.startMoved() : drive.start();
        return started.catch((error) => storeFailure(error, action as AnyAction, drive.position()));
      },
      (error) => {
        const at = { target, operationId: id, idempotencyKey: key, attempt: 0 };
        if (isUnstorable(error) && !shadowState) {
          // The call's own values (its input, target or key) cannot be kept by this store: retrying the same
          // call cannot help, changing it can. Nothing ran.
          const reason = `the operation store cannot keep this call: ${error.message}`;
          return early({ status: 'failed', errorCode: 'invalid_input', reason }, target);
        }
        if (!shadowState || isStoreMisuse(error)) return storeFailure(error, action as AnyAction, at);
        const call = { target, operationId: id, idempotencyKey: key, ctx, scope, signal, now };
        return runUnrecorded(action as AnyAction, input, call, shadowState, error);
      },
    );
    return track(id, key, fingerprint, done);
  }

  async function resume(
    record: OperationRecord,
    opts: { signal: AbortSignal; wait: boolean; actor: string | undefined; trace: RunTrace | undefined },
  ): Promise<Completion> {
    if (record.lifecycle === 'settled' && record.completion) return record.completion;
    const inflight = byId.get(record.id);
    const action = registry.get(record.action);
    if (inflight) return action ? join(inflight, opts.signal, record.id, action) : inflight;
    if (!action) {
      throw new ReadbackError('unknown_action', `no registered action is named "${record.action}"`, 'action');
    }
    // Parked accepted work is not due yet: a caller polling faster than the schedule gets the stored pending
    // completion (its `pollAfter` says when to come back) and spends no read, so an eager loop cannot use up
    // `poll.maxReads` before the provider had time to finish. A waiting caller waits for the due time instead.
    const due = opts.wait ? undefined : parkedDue(record);
    if (due !== undefined && due > clock.now() && record.completion) return record.completion;
    const drive = new Drive(env, action, record, {
      signal: opts.signal,
      actor: opts.actor,
      trace: opts.trace,
    });
    drive.runWait = opts.wait;
    // A duplicate run never re-executes open work: it only reads it back.
    const advanced = drive.advance(opts.wait ? 'wait' : 'once');
    return track(
      record.id,
      undefined,
      record.fingerprint,
      advanced.catch((error) => storeFailure(error, action, drive.position())),
    );
  }

  /**
   * Waits for a drive already in flight. A caller whose signal aborts stops waiting at once and gets what the
   * record holds then; the drive goes on for the caller that started it.
   */
  function join(done: Promise<Completion>, signal: AbortSignal, id: string, action: AnyAction) {
    if (signal === NEVER_ABORTED) return done;
    return new Promise<Completion>((resolve, reject) => {
      const stop = () => {
        store
          .get(id)
          .then((record) => (record ? new Drive(env, action, record, { signal }).current() : done))
          // The store cannot say where the record stands: the drive's own outcome is the only answer left.
          .then(resolve, () => done.then(resolve, reject));
      };
      if (signal.aborted) return stop();
      signal.addEventListener('abort', stop, { once: true });
      const off = () => signal.removeEventListener('abort', stop);
      done.then(
        (completion) => {
          off();
          resolve(completion);
        },
        (error: unknown) => {
          off();
          reject(error);
        },
      );
    });
  }

  /** A store write failed: misuse still throws; otherwise the honest answer depends on whether execute ran. */
  function storeFailure(
    error: unknown,
    action: AnyAction,
    at: Pick<Outcome, 'target' | 'operationId' | 'idempotencyKey' | 'attempt'>,
  ): Completion {
    if (isStoreMisuse(error)) throw error;
    const nothingExecuted = at.attempt === 0;
    return toCompletion(
      {
        ...at,
        nothingExecuted,
        // Before execute nothing happened: a plain failure. After it the effect may have landed: unknown,
        // and the record (left open) is due for a reconciler to read back once the store works again.
        status: nothingExecuted ? 'failed' : 'unknown',
        errorCode: 'store_unavailable',
        reason: `the operation store failed: ${describeError(error)}`,
        next: nothingExecuted ? 'retry' : 'ask_user',
      },
      action,
    );
  }

  async function poll(operationId: string, options: PollOptions = {}): Promise<Completion> {
    checkPollOptions(options);
    const record = await store.get(operationId);
    if (!record)
      throw new ReadbackError('unknown_operation', `no operation has id "${operationId}"`, 'operationId');
    const known = registry.get(record.action);
    const t =
      tracer && known
        ? tracer.begin(
            known,
            {
              runId: record.runId,
              entry: 'poll',
              scope: record.scope,
              ...(options.actor ? { actor: options.actor } : {}),
            },
            record,
          )
        : undefined;
    const done = resume(record, {
      signal: options.signal ?? NEVER_ABORTED,
      wait: options.wait === true,
      actor: options.actor,
      trace: t,
    });
    return t ? traced(t, done) : done;
  }

  const actionNamed = (name: string) => registry.get(name);

  // A reviewer's decision is part of the run record: traced as a `review` call whose permission event
  // names the decision, then its state transition and the completion it formed.
  async function review(
    operationId: string,
    verdict: 'approved' | 'rejected',
    decision: ReviewDecision,
  ): Promise<Completion> {
    // The decision's time, which its store event carries and so does its trace transition.
    let decidedAt = 0;
    const decide = () => {
      decidedAt = clock.now();
      return recordDecision(store, actionNamed, operationId, verdict, decision, decidedAt);
    };
    const record = tracer ? await store.get(operationId) : null;
    const known = record ? registry.get(record.action) : undefined;
    if (!tracer || !record || !known || record.lifecycle !== 'awaiting_approval') return decide();
    const by = typeof decision?.by === 'string' ? decision.by : undefined;
    const t = tracer.begin(
      known,
      { runId: record.runId, entry: 'review', scope: record.scope, ...(by ? { actor: by } : {}) },
      record,
    );
    const done = decide().then((completion) => {
      const note = typeof decision.note === 'string' && decision.note !== '' ? `: ${decision.note}` : '';
      t.permission(true, verdict === 'rejected' ? `rejected by ${by}${note}` : undefined);
      const lifecycle = verdict === 'approved' ? 'requested' : 'settled';
      t.transition(
        verdict,
        'awaiting_approval',
        {
          ...record,
          lifecycle,
          status: verdict === 'approved' ? record.status : completion.status,
        },
        decidedAt,
      );
      return completion;
    });
    return traced(t, done);
  }
  return {
    store,
    clock,
    run,
    shadow,
    poll,
    register,
    action: actionNamed,
    inShadow: (action) => isShadowed(runnerShadow, action),
    approve: (id, decision) => review(id, 'approved', decision),
    reject: (id, decision) => review(id, 'rejected', decision),
    reconcile: (options) => reconcileLoop(env, registry, options),
  };
}

function createTracer(options: TraceOptions | undefined, clock: Clock): Tracer | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null || !Array.isArray(options.sinks)) {
    throw new ReadbackError('invalid_options', 'expected { sinks: TraceSink[] }', 'trace');
  }
  options.sinks.forEach((sink, i) => {
    if (typeof sink?.write !== 'function') {
      throw new ReadbackError('invalid_options', 'a sink needs a write(event) method', `trace.sinks[${i}]`);
    }
  });
  checkTraceOptions(options);
  // No sinks means no events: skip building them entirely.
  return options.sinks.length ? new Tracer(options, clock) : undefined;
}

/** Emits the call's completion (or its error) when it ends, passing the outcome through unchanged. */
function traced(t: RunTrace, done: Promise<Completion>, shadowState?: ShadowState): Promise<Completion> {
  return done.then(
    (c) => {
      // Early exits and store failures are formed outside the drive: the trace must still see them as shadow.
      const shown = shadowState && !c.shadow ? shadowState.mark(c) : c;
      t.completed(shown);
      return shown;
    },
    (error) => {
      t.failed(error);
      throw error;
    },
  );
}

// A store refusing a value it cannot keep as given (see `requireStorableText`): not a misuse of readback.
function isUnstorable(error: unknown): error is ReadbackError {
  return error instanceof ReadbackError && error.code === 'unstorable_value';
}
