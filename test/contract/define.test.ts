import { describe, expect, it } from 'vitest';
import type { ActionContract, StandardSchemaV1 } from '../../src/index.js';
import { DEFAULTS, defineAction, isAction, ReadbackError } from '../../src/index.js';

/** A Standard Schema that passes any value through unchanged. */
const anything: StandardSchemaV1<unknown, { id: string }> = {
  '~standard': { version: 1, vendor: 'test', validate: (value) => ({ value: value as { id: string } }) },
};

type Contract = ActionContract<{ id: string }, { id: string; status: string }>;

/** A complete, valid committed contract; each case breaks one field of a copy. */
function good(overrides: Record<string, unknown> = {}): Contract {
  return {
    name: 'close_ticket',
    description: 'Close a ticket.',
    input: anything,
    target: (input) => `ticket:${input.id}`,
    postcondition: 'The ticket is closed.',
    execute: async () => ({ ok: true }),
    observe: async (input) => ({ id: input.id, status: 'closed' }),
    expect: () => ({ status: 'closed' }),
    ...overrides,
  } as Contract;
}

/** Without `key`, as if the user never wrote it. */
function without(key: string, overrides: Record<string, unknown> = {}): Contract {
  const contract = good(overrides) as unknown as Record<string, unknown>;
  delete contract[key];
  return contract as unknown as Contract;
}

/** Calls defineAction and returns the ReadbackError it throws (failing the test if it does not throw one). */
function contractError(contract: unknown): ReadbackError {
  try {
    defineAction(contract as Contract);
  } catch (error) {
    expect(error).toBeInstanceOf(ReadbackError);
    const e = error as ReadbackError;
    expect(e.code).toBe('invalid_contract');
    expect(e.name).toBe('ReadbackError');
    return e;
  }
  throw new Error('defineAction accepted an invalid contract');
}

function expectField(contract: unknown, field: string, message?: RegExp): ReadbackError {
  const error = contractError(contract);
  expect(error.field).toBe(field);
  // The message names the field, so a log line alone says what to fix.
  expect(error.message.startsWith(`${field}: `)).toBe(true);
  if (message) expect(error.message).toMatch(message);
  return error;
}

const at = (name: string) => `action "close_ticket".${name}`;

describe('defineAction rejects unusable contracts, naming the field', () => {
  it('rejects a non-object contract', () => {
    expectField(null, 'contract', /object/);
    expectField('close_ticket', 'contract', /object/);
    expectField(undefined, 'contract');
  });

  it('rejects a missing name', () => {
    expectField(without('name'), 'action.name', /1-128 characters/);
  });

  it.each([
    ['an empty name', ''],
    ['a name with spaces', 'close ticket'],
    ['a name starting with a digit', '1close'],
    ['a name longer than 128 characters', `a${'b'.repeat(128)}`],
    ['a name with a slash', 'tickets/close'],
  ])('rejects %s', (_label, name) => {
    expectField(good({ name }), `action "${name}".name`, /1-128 characters/);
  });

  it('rejects a non-string name', () => {
    expectField(good({ name: 42 }), 'action.name');
  });

  it('accepts names at the edges of the pattern', () => {
    expect(defineAction(good({ name: 'a' })).name).toBe('a');
    expect(defineAction(good({ name: `a${'b'.repeat(127)}` })).name).toHaveLength(128);
    expect(defineAction(good({ name: 'tickets.close_v2-beta' })).name).toBe('tickets.close_v2-beta');
  });

  it.each([
    ['description', ''],
    ['description', '   '],
    ['description', undefined],
    ['description', 7],
    ['postcondition', ''],
    ['postcondition', '\n\t'],
    ['postcondition', undefined],
  ])('rejects an empty or missing %s (%j)', (field, value) => {
    const contract = value === undefined ? without(field) : good({ [field]: value });
    expectField(contract, at(field), /non-empty string/);
  });

  it.each([
    ['missing', undefined],
    ['a plain object', { parse: () => ({}) }],
    ['a function', () => true],
    ['the wrong version', { '~standard': { version: 2, vendor: 'x', validate: () => ({ value: 1 }) } }],
    ['no validate function', { '~standard': { version: 1, vendor: 'x' } }],
    ['null', null],
  ])('rejects an input that is not a Standard Schema: %s', (_label, input) => {
    const contract = input === undefined ? without('input') : good({ input });
    expectField(contract, at('input'), /Standard Schema/);
  });

  it.each(['target', 'execute'])('rejects a missing %s', (fn) => {
    expectField(without(fn), at(fn), /must be a function; got undefined/);
  });

  it.each(['target', 'execute'])('rejects a %s that is not a function', (fn) => {
    expectField(good({ [fn]: 'ticket:1' }), at(fn), /must be a function; got "ticket:1"/);
  });

  it.each([
    'before',
    'observe',
    'expect',
    'acceptable',
    'fresh',
    'scopeOf',
    'terminal',
    'idempotencyKey',
    'authorize',
  ])('rejects an optional hook %s that is present but not a function', (fn) => {
    expectField(good({ [fn]: null }), at(fn), /must be a function; got null/);
  });

  describe('durations', () => {
    const bad = [-1, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, '100'];

    it.each(bad)('rejects maxInFlightMs = %s', (value) => {
      expectField(good({ maxInFlightMs: value }), at('maxInFlightMs'), /finite number of milliseconds ≥ 0/);
    });

    it.each([...bad, 0])('rejects verifyTimeoutMs = %s (must be ≥ 1)', (value) => {
      expectField(good({ verifyTimeoutMs: value }), at('verifyTimeoutMs'), /≥ 1/);
    });

    it.each([...bad, 0])('rejects executeTimeoutMs = %s (must be ≥ 1)', (value) => {
      expectField(good({ executeTimeoutMs: value }), at('executeTimeoutMs'), /≥ 1/);
    });

    it.each(bad)('rejects settle.timeoutMs = %s', (value) => {
      expectField(good({ settle: { timeoutMs: value } }), at('settle.timeoutMs'), /≥ 0/);
    });

    it.each([...bad, 0])('rejects settle.intervalMs = %s', (value) => {
      expectField(good({ settle: { intervalMs: value } }), at('settle.intervalMs'), /≥ 1/);
    });

    it.each([...bad, 0])('rejects poll.maxDurationMs = %s', (value) => {
      expectField(good({ poll: { maxDurationMs: value } }), at('poll.maxDurationMs'), /≥ 1/);
    });

    it.each(bad)('rejects poll.initialDelayMs = %s', (value) => {
      expectField(good({ poll: { initialDelayMs: value } }), at('poll.initialDelayMs'), /≥ 0/);
    });

    it.each(bad)('rejects poll.maxDelayMs = %s', (value) => {
      expectField(good({ poll: { maxDelayMs: value } }), at('poll.maxDelayMs'), /≥ 0/);
    });

    it('quotes the bad value in the message', () => {
      expectField(good({ maxInFlightMs: -5 }), at('maxInFlightMs'), /got -5$/);
      expectField(good({ verifyTimeoutMs: Number.NaN }), at('verifyTimeoutMs'), /got NaN$/);
      expectField(good({ settle: { timeoutMs: null } }), at('settle.timeoutMs'), /got null$/);
    });

    it('accepts zero where zero is meaningful', () => {
      const action = defineAction(
        good({ maxInFlightMs: 0, settle: { timeoutMs: 0 }, poll: { initialDelayMs: 0, maxDelayMs: 0 } }),
      );
      expect(action.maxInFlightMs).toBe(0);
      expect(action.settle.timeoutMs).toBe(0);
      expect(action.poll.initialDelayMs).toBe(0);
      expect(action.poll.maxDelayMs).toBe(0);
    });

    // Regression: nested settle/poll fields set to undefined must take the default, as top-level ones
    // do, so `settle: { timeoutMs: options.timeout }` works when the option is absent.
    it('treats an explicitly undefined settle/poll field as the default, like top-level fields', () => {
      expect(defineAction(good({ maxInFlightMs: undefined })).maxInFlightMs).toBe(DEFAULTS.maxInFlightMs);
      const action = defineAction(
        good({ settle: { timeoutMs: undefined, intervalMs: 50 }, poll: { maxReads: undefined } }),
      );
      expect(action.settle).toEqual({ timeoutMs: DEFAULTS.settle.timeoutMs, intervalMs: 50 });
      expect(action.poll.maxReads).toBe(DEFAULTS.poll.maxReads);
    });
  });

  describe('poll budget', () => {
    it.each([
      0,
      1.5,
      -1,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      '3',
    ])('rejects poll.maxReads = %s', (value) => {
      expectField(good({ poll: { maxReads: value } }), at('poll.maxReads'), /whole number ≥ 1/);
    });

    it.each([
      -0.01,
      1.01,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      '0.5',
    ])('rejects poll.jitter = %s', (value) => {
      expectField(good({ poll: { jitter: value } }), at('poll.jitter'), /from 0 to 1/);
    });

    it('accepts jitter at both ends of 0..1 and maxReads of 1', () => {
      expect(defineAction(good({ poll: { jitter: 0 } })).poll.jitter).toBe(0);
      expect(defineAction(good({ poll: { jitter: 1 } })).poll.jitter).toBe(1);
      expect(defineAction(good({ poll: { maxReads: 1 } })).poll.maxReads).toBe(1);
    });

    it('rejects maxDelayMs below initialDelayMs, including a default on one side', () => {
      expectField(
        good({ poll: { initialDelayMs: 1_000, maxDelayMs: 999 } }),
        at('poll.maxDelayMs'),
        /at least poll.initialDelayMs/,
      );
      // The default maxDelayMs (5000) is below an explicit initialDelayMs of 6000.
      expectField(good({ poll: { initialDelayMs: 6_000 } }), at('poll.maxDelayMs'));
      expect(defineAction(good({ poll: { initialDelayMs: 700, maxDelayMs: 700 } })).poll.maxDelayMs).toBe(
        700,
      );
    });
  });

  describe('modes', () => {
    it('rejects an unknown mode string', () => {
      expectField(good({ mode: 'eventual' }), at('mode'), /committed, accepted, optimistic; got eventual/);
      expectField(good({ mode: 'Committed' }), at('mode'));
      expectField(good({ mode: 3 }), at('mode'));
    });

    it('rejects accepted mode without observe', () => {
      expectField(
        without('observe', { mode: 'accepted', terminal: () => 'running' }),
        at('observe'),
        /accepted/,
      );
    });

    it('rejects accepted mode without terminal', () => {
      expectField(good({ mode: 'accepted' }), at('terminal'), /accepted mode/);
    });

    it('rejects accepted mode without expect', () => {
      expectField(without('expect', { mode: 'accepted', terminal: () => 'running' }), at('expect'));
    });

    it('rejects committed mode (explicit or default) without observe', () => {
      expectField(without('observe'), at('observe'), /committed mode/);
      expectField(without('observe', { mode: 'committed' }), at('observe'), /authoritative read/);
    });

    it('rejects committed mode without expect', () => {
      expectField(without('expect'), at('expect'), /committed mode/);
    });

    it('rejects optimistic mode with an observe', () => {
      expectField(good({ mode: 'optimistic' }), at('observe'), /optimistic action has no verifier/);
    });

    it('accepts optimistic mode with neither observe nor expect', () => {
      const contract = without('observe', { mode: 'optimistic' }) as unknown as Record<string, unknown>;
      delete contract.expect;
      const action = defineAction(contract as unknown as Contract);
      expect(action.mode).toBe('optimistic');
      expect(action.observe).toBeUndefined();
    });

    it('accepts accepted mode with observe, expect and terminal', () => {
      expect(defineAction(good({ mode: 'accepted', terminal: () => 'succeeded' })).mode).toBe('accepted');
    });
  });

  it.each([['yes'], [1], ['true'], [0], [{}]])('rejects safeToRepeat = %j', (value) => {
    expectField(good({ safeToRepeat: value }), at('safeToRepeat'), /true, false or "unknown"/);
  });

  it.each([true, false, 'unknown'] as const)('accepts safeToRepeat = %j', (value) => {
    expect(defineAction(good({ safeToRepeat: value })).safeToRepeat).toBe(value);
  });

  describe('messages', () => {
    it('rejects an unknown status key', () => {
      expectField(
        good({ messages: { done: () => 'Done.' } }),
        at('messages.done'),
        /is not a status; expected one of verified, pending, failed, partial, no_op, unknown/,
      );
    });

    it('rejects a template that is not a function', () => {
      expectField(
        good({ messages: { verified: 'Done.' } }),
        at('messages.verified'),
        /must be a function; got "Done."/,
      );
    });

    it('rejects a messages value that is not an object', () => {
      expectField(good({ messages: null }), at('messages'), /status → template/);
      expectField(good({ messages: 'verified' }), at('messages'));
    });

    it('accepts templates for known statuses', () => {
      const verified = () => 'Closed.';
      const action = defineAction(good({ messages: { verified } }));
      expect(action.messages?.verified).toBe(verified);
    });
  });
});

describe('defineAction refuses fields it would otherwise ignore', () => {
  // A misspelt optional field used to be dropped in silence, switching its check off (no scope check, the
  // default 5 s timeout instead of the one written down).
  it.each([
    ['scopeof', 'scopeOf'],
    ['fersh', 'fresh'],
    ['verifyTimeoutMS', 'verifyTimeoutMs'],
    ['postConditon', 'postcondition'],
    ['safeToRepet', 'safeToRepeat'],
  ])('rejects the misspelt field %s, suggesting %s', (typo, meant) => {
    expectField(
      good({ [typo]: () => true }),
      at(typo),
      new RegExp(`not a contract field; did you mean "${meant}"`),
    );
  });

  it('rejects an unrelated extra field without a guess', () => {
    const error = expectField(good({ tags: ['billing'] }), at('tags'), /is not a contract field$/);
    expect(error.message).not.toMatch(/did you mean/);
  });

  it('rejects misspelt settle and poll fields, and arrays for them', () => {
    expectField(good({ poll: { maxRead: 3 } }), at('poll.maxRead'), /did you mean "maxReads"/);
    expectField(good({ settle: { timeout: 10 } }), at('settle.timeout'), /not a contract field/);
    expectField(good({ poll: [3] }), at('poll'), /must be an object/);
    expectField(good({ messages: [] }), at('messages'), /status → template/);
  });

  // Only undefined means "use the default", as inside settle and poll: null is refused like any wrong value.
  it.each(['mode', 'maxInFlightMs', 'verifyTimeoutMs', 'executeTimeoutMs'])('rejects %s = null', (key) => {
    expectField(good({ [key]: null }), at(key), /got null/);
  });

  it('still re-defines an action from a copy of itself', () => {
    const action = defineAction(good({ poll: { maxReads: 3 } }));
    const again = defineAction({ ...action, name: 'close_ticket_v2' });
    expect(again.poll.maxReads).toBe(3);
    expect(again.name).toBe('close_ticket_v2');
  });
});

describe('defineAction on a good contract', () => {
  it('returns a frozen action with every default filled in', () => {
    const contract = good();
    const action = defineAction(contract);

    expect(Object.isFrozen(action)).toBe(true);
    expect(isAction(action)).toBe(true);
    expect(isAction(contract)).toBe(false);
    expect(action.kind).toBe('readback.action');
    expect(action.name).toBe('close_ticket');
    expect(action.mode).toBe('committed');
    expect(action.safeToRepeat).toBe('unknown');
    expect(action.maxInFlightMs).toBe(DEFAULTS.maxInFlightMs);
    expect(action.verifyTimeoutMs).toBe(DEFAULTS.verifyTimeoutMs);
    expect(action.executeTimeoutMs).toBe(DEFAULTS.executeTimeoutMs);
    expect(action.settle).toEqual(DEFAULTS.settle);
    expect(action.poll).toEqual(DEFAULTS.poll);
    // The user's functions are kept as given.
    expect(action.execute).toBe(contract.execute);
    expect(action.observe).toBe(contract.observe);
    expect(() => {
      (action as unknown as { mode: string }).mode = 'optimistic';
    }).toThrow(TypeError);
    // The contract object itself is not mutated or frozen.
    expect(Object.isFrozen(contract)).toBe(false);
    expect('kind' in contract).toBe(false);
  });

  it('merges partial settle and poll settings over the defaults', () => {
    const action = defineAction(
      good({ settle: { timeoutMs: 2_000 }, poll: { maxReads: 3, jitter: 0 }, maxInFlightMs: 10 }),
    );
    expect(action.settle).toEqual({ timeoutMs: 2_000, intervalMs: DEFAULTS.settle.intervalMs });
    expect(action.poll).toEqual({ ...DEFAULTS.poll, maxReads: 3, jitter: 0 });
    expect(action.maxInFlightMs).toBe(10);
  });

  it('does not share default objects between actions', () => {
    const a = defineAction(good());
    const b = defineAction(good({ name: 'other' }));
    expect(a.poll).not.toBe(b.poll);
    expect(a.settle).not.toBe(DEFAULTS.settle);
  });

  it('isAction rejects look-alikes', () => {
    expect(isAction(null)).toBe(false);
    expect(isAction('readback.action')).toBe(false);
    expect(isAction({ kind: 'readback.actions' })).toBe(false);
  });
});
