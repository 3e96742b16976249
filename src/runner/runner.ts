import { systemClock } from '../clock.js';
import { isAction } from '../contract/define.js';
import type { Action, AnyAction, Completion } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import { newOperationId } from '../ids.js';
import { type Validated, validateInput } from '../schema.js';
import { memoryStore } from '../store/memory.js';
import { isStoreMisuse } from '../store/records.js';
import type { OperationRecord } from '../store/types.js';
import { reviewOperation } from './approval.js';
import { authorize, checkContext, conflict, idempotencyKeyFor, intentOf } from './call-checks.js';
import { Drive, startingMove } from './drive.js';
import { parkedDue } from './follow.js';
import { checkPollOptions, checkRunnerOptions } from './options.js';
import { type Outcome, toCompletion } from './outcome.js';
import { type MaybePrevalidated, PREVALIDATED } from './prevalidated.js';
import { describeError } from './readback.js';
import { reconcileLoop } from './reconcile.js';
import type { PollOptions, Runner, RunnerOptions, RunOptions } from './runner-types.js';
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
import { createTracer, traced } from './tracer.js';

// How long a reserved record may sit in `requested` (its baseline read runs then) before a reconciler
// treats its run as dead; a live run that is merely slow still wins, because its move to executing is a CAS.
const REQUESTED_GRACE_MS = 30_000;

export type { PollOptions, Runner, RunnerOptions, RunOptions } from './runner-types.js';

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
  const reviewDeps = { store, clock, actionNamed, tracer };
  return {
    store,
    clock,
    run,
    shadow,
    poll,
    register,
    action: actionNamed,
    inShadow: (action) => isShadowed(runnerShadow, action),
    approve: (id, decision) => reviewOperation(reviewDeps, id, 'approved', decision),
    reject: (id, decision) => reviewOperation(reviewDeps, id, 'rejected', decision),
    reconcile: (options) => reconcileLoop(env, registry, options),
  };
}

// A store refusing a value it cannot keep as given (see `requireStorableText`): not a misuse of readback.
function isUnstorable(error: unknown): error is ReadbackError {
  return error instanceof ReadbackError && error.code === 'unstorable_value';
}
