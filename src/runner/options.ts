import { unknownField } from '../contract/fields.js';
import { optionalBoolean, optionalFunction, ReadbackError } from '../errors.js';
import type { OperationStore } from '../store/types.js';
import { checkSignal } from './call-checks.js';
import type { PollOptions, RunnerOptions } from './runner-types.js';
import type { TraceOptions } from './tracer.js';

// The checks of the runner's own option objects, made when they are given: a bad value found later would
// surface in the middle of a run, or not at all.

// A record typed by RunnerOptions, so an option added there and not here fails to build.
const RUNNER_OPTION_SET: Record<keyof RunnerOptions, true> = {
  store: true,
  clock: true,
  actions: true,
  retryBudget: true,
  random: true,
  newId: true,
  trace: true,
  shadow: true,
};
const RUNNER_OPTIONS = Object.keys(RUNNER_OPTION_SET);
const TRACE_OPTION_SET: Record<keyof TraceOptions, true> = {
  sinks: true,
  redaction: true,
  recordArguments: true,
  recordResults: true,
  claimOf: true,
  onSinkError: true,
};
const TRACE_OPTIONS = Object.keys(TRACE_OPTION_SET);
// The methods every store needs; `renewLease` is optional.
const STORE_METHODS = [
  'reserve',
  'transition',
  'get',
  'getByKey',
  'events',
  'list',
  'claimDue',
  'close',
] as const;

/**
 * Refuses runner options that would otherwise fail in the middle of a run (a clock without `now`) or be
 * swapped for a default in silence (`store: null` would have kept every record in memory only).
 */
export function checkRunnerOptions(options: RunnerOptions): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ReadbackError('invalid_options', 'expected an options object', 'options');
  }
  const unknown = unknownField(options, RUNNER_OPTIONS);
  if (unknown) {
    throw new ReadbackError('invalid_options', `is not a runner option${unknown.hint}`, unknown.key);
  }
  const { store, clock, actions } = options;
  if (store !== undefined) {
    const missing = STORE_METHODS.filter(
      (m) => typeof (store as Partial<OperationStore> | null)?.[m] !== 'function',
    );
    if (missing.length) {
      throw new ReadbackError(
        'invalid_options',
        `must be an OperationStore (memoryStore(), sqliteStore(), postgresStore()); missing ${missing.join(', ')}`,
        'store',
      );
    }
  }
  if (clock !== undefined) {
    if (typeof clock?.now !== 'function' || typeof clock.sleep !== 'function') {
      throw new ReadbackError('invalid_options', 'must be a Clock with now() and sleep(ms, signal)', 'clock');
    }
    if (clock.deadline !== undefined && typeof clock.deadline !== 'function') {
      throw new ReadbackError('invalid_options', 'must be a function when given', 'clock.deadline');
    }
  }
  optionalFunction(options.random, 'random');
  optionalFunction(options.newId, 'newId');
  optionalBoolean(options.shadow, 'shadow');
  if (actions !== undefined && !Array.isArray(actions)) {
    throw new ReadbackError(
      'invalid_options',
      'must be an array of actions made by defineAction()',
      'actions',
    );
  }
}

/** Throws `invalid_options` for `runner.poll` options readback cannot use. */
export function checkPollOptions(options: PollOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new ReadbackError('invalid_options', 'expected an options object', 'options');
  }
  checkSignal(options.signal, 'options.signal');
  optionalBoolean(options.wait, 'options.wait');
  if (options.actor !== undefined && typeof options.actor !== 'string') {
    throw new ReadbackError('invalid_options', 'must be a string', 'options.actor');
  }
}

/** Throws `invalid_options` for trace settings the tracer would trip over later, mid-run or not at all. */
export function checkTraceOptions(options: TraceOptions): void {
  // A misspelt `redaction` would drop the user's own secret rules without a word.
  const unknown = unknownField(options, TRACE_OPTIONS);
  if (unknown) {
    throw new ReadbackError(
      'invalid_options',
      `is not a trace option${unknown.hint}`,
      `trace.${unknown.key}`,
    );
  }
  options.sinks.forEach((sink, i) => {
    // The tracer calls `types.has` outside the sink's own try: an array here would throw out of the run.
    const types = sink.types as { has?: unknown; [Symbol.iterator]?: unknown } | undefined;
    if (
      types !== undefined &&
      (typeof types?.has !== 'function' || typeof types[Symbol.iterator] !== 'function')
    ) {
      throw new ReadbackError(
        'invalid_options',
        'must be a Set of event types (callbackSink and jsonlSink build one from a list)',
        `trace.sinks[${i}].types`,
      );
    }
  });
  optionalFunction(options.claimOf, 'trace.claimOf');
  optionalFunction(options.onSinkError, 'trace.onSinkError');
  optionalBoolean(options.recordArguments, 'trace.recordArguments');
  optionalBoolean(options.recordResults, 'trace.recordResults');
}
