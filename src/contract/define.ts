import { ReadbackError } from '../errors.js';
import { isStandardSchema } from '../schema.js';
import { unknownField } from './fields.js';
import type { Action, ActionContract, Mode, PollPolicy, SettlePolicy } from './types.js';
import { STATUSES } from './types.js';

const MODES: readonly Mode[] = ['committed', 'accepted', 'optimistic'];

/** Defaults chosen so an action with no timing settings still ends in bounded time. */
export const DEFAULTS = {
  maxInFlightMs: 30_000,
  verifyTimeoutMs: 5_000,
  executeTimeoutMs: 30_000,
  settle: { timeoutMs: 0, intervalMs: 100 } satisfies SettlePolicy,
  poll: {
    maxDurationMs: 60_000,
    maxReads: 20,
    initialDelayMs: 250,
    maxDelayMs: 5_000,
    jitter: 0.5,
  } satisfies PollPolicy,
};

const NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_.-]{0,127}$/;

// Every field a contract may have (`kind` too, so an action can be re-defined from a copy of itself). A contract
// is a closed shape, as in the YAML contract file: a misspelt optional field (`scopeof`, `fersh`) would otherwise
// switch its check off in silence.
// Typed as a record so the compiler keeps it in step with ActionContract: a field added there and not here fails to build.
const CONTRACT_FIELD_SET: Record<keyof ActionContract<unknown, unknown> | 'kind', true> = {
  name: true,
  description: true,
  system: true,
  input: true,
  target: true,
  mode: true,
  postcondition: true,
  before: true,
  execute: true,
  observe: true,
  expect: true,
  acceptable: true,
  fresh: true,
  scopeOf: true,
  targetOf: true,
  terminal: true,
  idempotencyKey: true,
  safeToRepeat: true,
  maxInFlightMs: true,
  settle: true,
  poll: true,
  verifyTimeoutMs: true,
  executeTimeoutMs: true,
  authorize: true,
  needsApproval: true,
  messages: true,
  shadow: true,
  kind: true,
};
const CONTRACT_FIELDS: readonly string[] = Object.keys(CONTRACT_FIELD_SET);
const SETTLE_FIELDS = Object.keys(DEFAULTS.settle);
const POLL_FIELDS = Object.keys(DEFAULTS.poll);

/**
 * Validates a completion contract once, fills in defaults, and returns the action the runner executes.
 * Unsafe or unfinishable settings throw `ReadbackError('invalid_contract')` naming the field.
 */
export function defineAction<I, O>(contract: ActionContract<I, O>): Action<I, O> {
  if (typeof contract !== 'object' || contract === null) {
    fail('contract', 'expected an object describing the action');
  }
  const where = typeof contract.name === 'string' ? `action "${contract.name}"` : 'action';
  const field = (name: string) => `${where}.${name}`;
  knownFields(contract, CONTRACT_FIELDS, field);

  if (typeof contract.name !== 'string' || !NAME_PATTERN.test(contract.name)) {
    fail(field('name'), 'must be 1-128 characters: a letter, then letters, digits, "_", "." or "-"');
  }
  requireText(contract.description, field('description'));
  requireText(contract.postcondition, field('postcondition'));
  if (contract.system !== undefined) requireText(contract.system, field('system'));
  if (!isStandardSchema(contract.input)) {
    fail(field('input'), 'must be a Standard Schema v1 validator (zod 4, valibot, arktype, ...)');
  }
  for (const fn of ['target', 'execute'] as const) requireFunction(contract[fn], field(fn));
  for (const fn of [
    'before',
    'observe',
    'expect',
    'acceptable',
    'fresh',
    'scopeOf',
    'targetOf',
    'terminal',
    'idempotencyKey',
    'authorize',
    'needsApproval',
  ] as const) {
    if (contract[fn] !== undefined) requireFunction(contract[fn], field(fn));
  }

  // Only undefined means "use the default": null is a value, and refused like any other wrong one.
  const mode = contract.mode === undefined ? 'committed' : contract.mode;
  if (!MODES.includes(mode)) fail(field('mode'), `must be one of ${MODES.join(', ')}; got ${String(mode)}`);
  if (mode === 'optimistic') {
    if (contract.observe) {
      fail(
        field('observe'),
        'an optimistic action has no verifier; use mode "committed" or "accepted" to verify',
      );
    }
  } else {
    if (!contract.observe)
      fail(field('observe'), `is required in ${mode} mode: it is the authoritative read`);
    if (!contract.expect) fail(field('expect'), `is required in ${mode} mode: it states what must hold`);
  }
  if (mode === 'accepted' && !contract.terminal) {
    fail(field('terminal'), 'is required in accepted mode: it tells running work from finished work');
  }
  const safeToRepeat = contract.safeToRepeat === undefined ? 'unknown' : contract.safeToRepeat;
  if (safeToRepeat !== true && safeToRepeat !== false && safeToRepeat !== 'unknown') {
    fail(field('safeToRepeat'), 'must be true, false or "unknown"');
  }

  if (contract.shadow !== undefined && typeof contract.shadow !== 'boolean') {
    fail(field('shadow'), `must be true or false; got ${describe(contract.shadow)}`);
  }

  const settle = { ...DEFAULTS.settle, ...definedFields(contract.settle, SETTLE_FIELDS, field('settle')) };
  const poll = { ...DEFAULTS.poll, ...definedFields(contract.poll, POLL_FIELDS, field('poll')) };
  const given = <T>(value: T | undefined, fallback: T) => (value === undefined ? fallback : value);
  const action: Action<I, O> = {
    ...contract,
    kind: 'readback.action',
    mode,
    safeToRepeat,
    maxInFlightMs: duration(given(contract.maxInFlightMs, DEFAULTS.maxInFlightMs), field('maxInFlightMs')),
    verifyTimeoutMs: duration(
      given(contract.verifyTimeoutMs, DEFAULTS.verifyTimeoutMs),
      field('verifyTimeoutMs'),
      1,
    ),
    executeTimeoutMs: duration(
      given(contract.executeTimeoutMs, DEFAULTS.executeTimeoutMs),
      field('executeTimeoutMs'),
      1,
    ),
    settle: Object.freeze({
      timeoutMs: duration(settle.timeoutMs, field('settle.timeoutMs')),
      intervalMs: duration(settle.intervalMs, field('settle.intervalMs'), 1),
    }),
    poll: Object.freeze({
      maxDurationMs: duration(poll.maxDurationMs, field('poll.maxDurationMs'), 1),
      maxReads: count(poll.maxReads, field('poll.maxReads')),
      initialDelayMs: duration(poll.initialDelayMs, field('poll.initialDelayMs')),
      maxDelayMs: duration(poll.maxDelayMs, field('poll.maxDelayMs')),
      jitter: fraction(poll.jitter, field('poll.jitter')),
    }),
  };
  if (action.poll.maxDelayMs < action.poll.initialDelayMs) {
    fail(field('poll.maxDelayMs'), 'must be at least poll.initialDelayMs');
  }
  if (contract.messages !== undefined) {
    if (
      typeof contract.messages !== 'object' ||
      contract.messages === null ||
      Array.isArray(contract.messages)
    ) {
      fail(field('messages'), 'must be an object of status → template function');
    }
    for (const [status, template] of Object.entries(contract.messages)) {
      if (!(STATUSES as readonly string[]).includes(status)) {
        fail(field(`messages.${status}`), `is not a status; expected one of ${STATUSES.join(', ')}`);
      }
      requireFunction(template, field(`messages.${status}`));
    }
  }
  return Object.freeze(action);
}

/** True when `value` was produced by `defineAction`. */
export function isAction(value: unknown): value is Action {
  return (
    typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'readback.action'
  );
}

// Fields set to undefined mean "use the default", as they do at the top level of the contract.
function definedFields<T extends object>(
  value: T | undefined,
  known: readonly string[],
  field: string,
): Partial<T> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(field, 'must be an object');
  knownFields(value, known, (name) => `${field}.${name}`);
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Refuses a field that is not in `known`, suggesting the known one it most likely misspells. */
function knownFields(value: object, known: readonly string[], field: (name: string) => string): void {
  const unknown = unknownField(value, known);
  if (unknown) fail(field(unknown.key), `is not a contract field${unknown.hint}`);
}

function fail(field: string, message: string): never {
  throw new ReadbackError('invalid_contract', message, field);
}

function requireText(value: unknown, field: string): void {
  if (typeof value !== 'string' || value.trim() === '') fail(field, 'must be a non-empty string');
}

function requireFunction(value: unknown, field: string): void {
  if (typeof value !== 'function') fail(field, `must be a function; got ${describe(value)}`);
}

function duration(value: unknown, field: string, min = 0): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min) {
    fail(field, `must be a finite number of milliseconds ≥ ${min}; got ${describe(value)}`);
  }
  return value;
}

function count(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    fail(field, `must be a whole number ≥ 1; got ${describe(value)}`);
  }
  return value;
}

function fraction(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    fail(field, `must be a number from 0 to 1; got ${describe(value)}`);
  }
  return value;
}

function describe(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return JSON.stringify(value);
  return value === null ? 'null' : typeof value;
}
