import { describe, expect, it } from 'vitest';
import type { ActionContract, Completion, OperationStore, StandardSchemaV1 } from '../../src/index.js';
import {
  accepted,
  createRunner,
  defineAction,
  memoryStore,
  ReadbackError,
  rejected,
} from '../../src/index.js';
import { FakeClock } from '../../src/testing/fakes/fake-clock.js';

/** Passes any value through unchanged, so the runner itself must cope with whatever arrives. */
const anything: StandardSchemaV1<unknown, Record<string, unknown>> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: (value) => ({ value: value as Record<string, unknown> }),
  },
};

type In = Record<string, unknown>;
type Obs = Record<string, unknown>;

/** An action whose hooks each test replaces; it counts every execute and observe call. */
function harness(overrides: Partial<ActionContract<In, Obs>> = {}) {
  const calls = { execute: 0, observe: 0, target: 0 };
  const action = defineAction<In, Obs>({
    name: 'set_flag',
    description: 'Set a flag.',
    input: anything,
    target: () => 'flag:1',
    postcondition: 'The flag is on.',
    maxInFlightMs: 1_000,
    verifyTimeoutMs: 500,
    ...overrides,
    execute: async (input, ctx) => {
      calls.execute++;
      return overrides.execute ? overrides.execute(input, ctx) : { ok: true };
    },
    observe: async (input, ctx) => {
      calls.observe++;
      return overrides.observe ? overrides.observe(input, ctx) : { flag: 'on' };
    },
    expect: overrides.expect ?? (() => ({ flag: 'on' })),
  });
  const clock = new FakeClock();
  const runner = createRunner({ clock, random: () => 0.5 });
  return { action, runner, clock, calls };
}

const ctx = { runId: 'run-bad' };

function cyclic(): Obs {
  const value: Obs = { flag: 'on' };
  value.self = value;
  return value;
}

function throwingGetter(): Obs {
  return {
    flag: 'on',
    get secret(): string {
      throw new Error('getter exploded');
    },
  };
}

/** An unusable outcome: unknown with a code, and never the completion words. */
function expectUnknown(c: Completion, code: string | RegExp): void {
  expect(c.status).toBe('unknown');
  if (typeof code === 'string') expect(c.errorCode).toBe(code);
  else expect(c.errorCode).toMatch(code);
  expect(c.nextAllowedAction).not.toBe('none');
  expect(c.message).toContain(c.operationId);
}

/**
 * Settles `work` while holding back the process's unhandled-rejection reporting, so a test can show
 * a crash (and any stray rejected promise it leaves behind) as a failed assertion instead of an
 * unhandled error for the whole run. The rejections are collected and returned.
 */
async function settleCatchingUnhandled<T>(
  work: () => Promise<T>,
): Promise<{ result: PromiseSettledResult<T>; unhandled: unknown[] }> {
  const saved = process.listeners('unhandledRejection');
  process.removeAllListeners('unhandledRejection');
  const unhandled: unknown[] = [];
  const collect = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', collect);
  try {
    const [result] = await Promise.allSettled([work()]);
    // Unhandled rejections are reported after the microtask queue drains; give them two turns.
    for (let i = 0; i < 2; i++) await new Promise((resolve) => setImmediate(resolve));
    return { result: result!, unhandled };
  } finally {
    process.off('unhandledRejection', collect);
    for (const listener of saved) process.on('unhandledRejection', listener);
  }
}

/** The detail of the first event written after execute returned: it carries the raw result. */
async function rawOf(runner: ReturnType<typeof harness>['runner'], id: string) {
  const events = await runner.store.events(id);
  const at = events.findIndex((e) => e.type === 'executing');
  expect(at).toBeGreaterThanOrEqual(0);
  const after = events[at + 1];
  expect(after).toBeDefined();
  return after!.detail ?? {};
}

describe('observe returning something unusable gives unknown, never verified, never a crash', () => {
  it.each([
    ['an object with a cycle', cyclic, /cycle at self/],
    ['a BigInt field', () => ({ flag: 'on', count: 10n }), /bigint at count/],
    ['a getter that throws', throwingGetter, /getter_threw at secret/],
    ['a nested BigInt in an array', () => ({ flag: 'on', items: [{ n: 1n }] }), /bigint at items\[0\]\.n/],
    ['a function field', () => ({ flag: 'on', fn: () => 1 }), /unsupported_type at fn/],
  ])('%s', async (_label, observed, reason) => {
    const { action, runner } = harness({ observe: async () => observed() });
    const c = await runner.run(action, { on: true }, ctx);
    expectUnknown(c, 'unusable_observation');
    expect(c.reason).toMatch(reason);
    const record = await runner.store.get(c.operationId);
    expect(record?.lifecycle).not.toBe('settled');
  });

  it('a getter that throws on a field the expectation reads', async () => {
    const { action, runner } = harness({
      observe: async () => ({
        get flag(): string {
          throw new Error('flag getter exploded');
        },
      }),
    });
    expectUnknown(await runner.run(action, {}, ctx), 'unusable_observation');
  });
});

describe('observe throwing a non-Error', () => {
  it.each([
    ['a string', 'db is down', /db is down/],
    ['undefined', undefined, /undefined/],
    ['null', null, /null/],
    ['a number', 503, /503/],
    ['a plain object', { message: 'nope' }, /object/],
  ])('%s: unknown, verifier_unavailable', async (_label, thrown, reason) => {
    const { action, runner } = harness({
      observe: async () => {
        throw thrown;
      },
    });
    const c = await runner.run(action, {}, ctx);
    expectUnknown(c, 'verifier_unavailable');
    expect(c.reason).toMatch(reason);
  });

  it('an object whose toString throws is still described safely', async () => {
    const evil = {
      toString() {
        throw new Error('no printing');
      },
    };
    const { action, runner } = harness({
      observe: async () => {
        throw evil;
      },
    });
    const c = await runner.run(action, {}, ctx);
    expectUnknown(c, 'verifier_unavailable');
    expect(c.reason).toMatch(/unprintable/);
  });
});

describe('expect misbehaving', () => {
  it('expect throwing: unknown, with a code', async () => {
    const { action, runner } = harness({
      expect: () => {
        throw new Error('expect exploded');
      },
    });
    const c = await runner.run(action, {}, ctx);
    // The runner reports a throwing expect as an unusable observation (not invalid_expectation).
    expectUnknown(c, /^(unusable_observation|invalid_expectation)$/);
    expect(c.reason).toMatch(/expect exploded/);
  });

  it.each([
    ['an empty object', {}],
    ['an empty array', []],
    ['null', null],
    ['undefined', undefined],
    ['a string', 'yes'],
    ['a number', 1],
    ['true', true],
    [
      'a list mixing checks and units',
      [
        { name: 'a', pass: true },
        { target: 'x', expected: {}, observed: {} },
      ],
    ],
    ['a list of neither', [1, 2]],
  ])('expect returning %s: unknown, invalid_expectation', async (_label, expectation) => {
    const { action, runner } = harness({ expect: () => expectation as never });
    const c = await runner.run(action, {}, ctx);
    expectUnknown(c, 'invalid_expectation');
  });

  it('expected fields against an observation that is not a record: unknown, invalid_expectation', async () => {
    const { action, runner } = harness({ observe: async () => 'on' as unknown as Obs });
    expectUnknown(await runner.run(action, {}, ctx), 'invalid_expectation');
  });
});

describe('terminal() returning garbage in accepted mode', () => {
  const acceptedHarness = (terminal: () => unknown) =>
    harness({
      mode: 'accepted',
      terminal: terminal as () => 'running',
      execute: async () => accepted('job-1'),
      poll: { maxReads: 3, maxDurationMs: 10_000, initialDelayMs: 100, maxDelayMs: 1_000 },
    });

  it.each([
    ['a wrong string', 'done'],
    ['null', null],
    ['a number', 1],
    ['an object', { state: 'succeeded' }],
  ])('%s: never verified; the budget ends in unknown', async (_label, value) => {
    const { action, runner, calls } = acceptedHarness(() => value);
    const c = await runner.run(action, {}, ctx);
    expectUnknown(c, 'poll_budget_exhausted');
    expect(calls.execute).toBe(1);
    expect(calls.observe).toBe(3);
  });

  it('a wrong string while not waiting: pending, with the problem in the reason', async () => {
    const { action, runner, clock } = acceptedHarness(() => 'done');
    const first = await runner.run(action, {}, { ...ctx, wait: false });
    expect(first.status).toBe('pending');
    clock.advance(Date.parse(first.pollAfter ?? '') - clock.now());
    const c = await runner.poll(first.operationId);
    expect(c.status).toBe('pending');
    expect(c.reason).toMatch(/terminal\(\) returned done/);
  });

  it('terminal() throwing: never verified', async () => {
    const { action, runner } = acceptedHarness(() => {
      throw new Error('terminal exploded');
    });
    expectUnknown(await runner.run(action, {}, ctx), 'poll_budget_exhausted');
  });

  // Regression: `undefined` from terminal() once slipped through as an observed reading with no
  // evaluation and crashed run(); any value other than the three states must be refused.
  it('terminal() returning undefined: unknown, not a crash', async () => {
    const { action, runner } = acceptedHarness(() => undefined);
    const { result, unhandled } = await settleCatchingUnhandled(() => runner.run(action, {}, ctx));
    expect(unhandled).toEqual([]);
    expect(result.status).toBe('fulfilled');
    expectUnknown((result as PromiseFulfilledResult<Completion>).value, /.+/);
  });
});

describe('target() misbehaving: failed invalid_target, nothing executed', () => {
  it.each([
    [
      'throwing',
      () => {
        throw new Error('no id');
      },
      /no id/,
    ],
    ['returning an empty string', () => '', /non-empty string/],
    ['returning a number', () => 42, /non-empty string/],
    ['returning undefined', () => undefined, /non-empty string/],
  ])('%s', async (_label, target, reason) => {
    const { action, runner, calls } = harness({ target: target as () => string });
    const c = await runner.run(action, {}, ctx);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('invalid_target');
    expect(c.reason).toMatch(reason);
    expect(c.attempt).toBe(0);
    expect(c.safeToRepeat).toBe(true);
    expect(calls).toMatchObject({ execute: 0, observe: 0 });
    expect(await runner.store.list()).toEqual([]);
  });
});

describe('input that is not plain data: failed invalid_input, nothing executed', () => {
  it.each([
    [
      'a cycle',
      () => {
        const input: In = { id: 1 };
        input.self = input;
        return input;
      },
      /cycle/,
    ],
    ['a BigInt', () => ({ id: 1n }), /bigint at input\.id/],
    ['a throwing getter', throwingGetter, /getter_threw/],
    ['a symbol', () => ({ id: Symbol('x') }), /unsupported_type/],
  ])('%s', async (_label, input, reason) => {
    const { action, runner, calls } = harness();
    const c = await runner.run(action, input(), ctx);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('invalid_input');
    expect(c.reason).toMatch(/not plain data/);
    expect(c.reason).toMatch(reason);
    expect(calls).toMatchObject({ execute: 0, observe: 0 });
    expect(await runner.store.list()).toEqual([]);
  });
});

describe('execute returning something unusable: recorded as unrecordable, decided by the read-back', () => {
  it.each([
    ['a cycle', cyclic, 'cycle'],
    ['a BigInt', () => ({ ok: true, id: 99n }), 'bigint'],
    ['a throwing getter', throwingGetter, 'getter_threw'],
  ])('%s, verified by a matching read', async (_label, raw, reason) => {
    const { action, runner, calls } = harness({ execute: async () => raw() });
    const c = await runner.run(action, {}, ctx);
    expect(c.status).toBe('verified');
    expect(calls.execute).toBe(1);
    const detail = await rawOf(runner, c.operationId);
    expect(String(detail.raw)).toMatch(/^\[unrecordable/);
    expect(detail.rawUnusable).toBe(reason);
    const settled = (await runner.store.events(c.operationId)).find((e) => e.type === 'settled');
    expect(String(settled?.detail?.raw)).toMatch(/^\[unrecordable/);
  });

  it.each([
    ['a cycle', cyclic],
    ['a BigInt', () => ({ ok: true, id: 99n })],
    ['a throwing getter', throwingGetter],
  ])('%s, failed by a mismatching read (the raw "ok" is not trusted)', async (_label, raw) => {
    const { action, runner } = harness({
      execute: async () => raw(),
      observe: async () => ({ flag: 'off' }),
    });
    const c = await runner.run(action, {}, ctx);
    expect(c.status).toBe('failed');
    expect(c.errorCode).toBe('readback_mismatch');
    expect(String((await rawOf(runner, c.operationId)).raw)).toMatch(/^\[unrecordable/);
  });

  it('a rejection whose raw payload is unrecordable is still a failed rejection', async () => {
    const { action, runner } = harness({
      execute: async () => rejected('conflict', 'version moved', cyclic()),
    });
    const c = await runner.run(action, {}, ctx);
    expect(c).toMatchObject({ status: 'failed', errorCode: 'conflict', reason: 'version moved' });
    expect(String((await rawOf(runner, c.operationId)).raw)).toMatch(/^\[unrecordable/);
  });

  it('a revoked Proxy cannot even be awaited: treated as a throw, read back, verified by the read', async () => {
    const { proxy, revoke } = Proxy.revocable({ ok: true }, {});
    revoke();
    const { action, runner, calls } = harness({ execute: async () => proxy });
    const c = await runner.run(action, {}, ctx);
    expect(c.status).toBe('verified');
    expect(calls.execute).toBe(1);
    const executed = (await runner.store.events(c.operationId)).filter((e) => e.type === 'executing');
    expect(executed).toHaveLength(1);
  });

  // A "strict" proxy (common for lazy ORM rows and config objects) answers `then` so it can be awaited
  // but throws on any other unknown key, including the runner's marker symbol. Its own fields are still
  // plain data, so they are recorded; the status comes from the read-back.
  it('a strict proxy that throws on unknown keys: recorded by its own fields, no crash', async () => {
    const strict = new Proxy<Obs>(
      { ok: true },
      {
        get(target, key) {
          if (key === 'then') return undefined;
          if (key in target) return target[key as string];
          throw new TypeError(`unknown property ${String(key)}`);
        },
      },
    );
    const { action, runner } = harness({ execute: async () => strict });
    const { result, unhandled } = await settleCatchingUnhandled(() => runner.run(action, {}, ctx));
    expect(unhandled).toEqual([]);
    expect(result.status).toBe('fulfilled');
    const c = (result as PromiseFulfilledResult<Completion>).value;
    expect(c.status).toBe('verified');
    expect((await rawOf(runner, c.operationId)).raw).toEqual({ ok: true });
  });
});

describe('a drive that throws', () => {
  // Regression: the runner's bookkeeping on a drive promise must not raise a second, unhandled
  // rejection when the drive rejects (under Node's default that terminates the process).
  it('leaves no unhandled rejection behind when the caller handles run()', async () => {
    const store = memoryStore();
    let failWrites = false;
    const flaky: OperationStore = {
      ...store,
      transition: (...args) =>
        failWrites ? Promise.reject(new Error('store down')) : store.transition(...args),
    };
    const { action } = harness({
      execute: async () => {
        failWrites = true;
        return { ok: true };
      },
    });
    const runner = createRunner({ store: flaky, clock: new FakeClock() });
    const { result, unhandled } = await settleCatchingUnhandled(() => runner.run(action, {}, ctx));
    // A store outage after execute is an outcome: unknown (the effect may have landed), seen exactly once.
    expect(result.status).toBe('fulfilled');
    const c = (result as PromiseFulfilledResult<Completion>).value;
    expect(c).toMatchObject({ status: 'unknown', errorCode: 'store_unavailable', attempt: 1 });
    expect(c.reason).toContain('store down');
    expect(unhandled).toEqual([]);
  });

  it('a store that cannot reserve, rejecting or throwing: failed / store_unavailable, and execute never runs', async () => {
    const store = memoryStore();
    const readOnly = Object.assign(new Error('attempt to write a readonly database'), {
      code: 'SQLITE_READONLY',
    });
    const ioError = Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
    const broken: [string, OperationStore][] = [
      ['SQLITE_READONLY', { ...store, reserve: () => Promise.reject(readOnly) }],
      [
        'SQLITE_IOERR',
        {
          ...store,
          reserve: () => {
            throw ioError;
          },
        },
      ],
    ];
    for (const [code, failing] of broken) {
      let executed = 0;
      const { action } = harness({
        execute: async () => {
          executed++;
          return { ok: true };
        },
      });
      const runner = createRunner({ store: failing, clock: new FakeClock() });
      const { result, unhandled } = await settleCatchingUnhandled(() => runner.run(action, {}, ctx));
      expect(result.status).toBe('fulfilled');
      const c = (result as PromiseFulfilledResult<Completion>).value;
      expect(c).toMatchObject({
        status: 'failed',
        errorCode: 'store_unavailable',
        nextAllowedAction: 'retry',
        safeToRepeat: true,
      });
      expect(c.reason).toContain(code);
      expect(executed).toBe(0);
      expect(unhandled).toEqual([]);
    }
  });

  it('validators that answer at once or later, accept, refuse or throw: the same outcomes either way', async () => {
    type Validate = StandardSchemaV1<unknown, In>['~standard']['validate'];
    const schema = (validate: Validate): StandardSchemaV1<unknown, In> => ({
      '~standard': { version: 1, vendor: 'test', validate },
    });
    const refuse = { issues: [{ message: 'must be on', path: ['flag'] }] };
    const cases: [string, Validate, Partial<Completion>, number][] = [
      ['sync accept', (value) => ({ value: value as In }), { status: 'verified' }, 1],
      ['async accept', async (value) => ({ value: value as In }), { status: 'verified' }, 1],
      [
        'sync refuse',
        () => refuse,
        { status: 'failed', errorCode: 'invalid_input', reason: 'flag: must be on' },
        0,
      ],
      [
        'async refuse',
        async () => refuse,
        { status: 'failed', errorCode: 'invalid_input', reason: 'flag: must be on' },
        0,
      ],
    ];
    for (const [label, validate, expected, executes] of cases) {
      const { action, runner, calls } = harness({ input: schema(validate) });
      const c = await runner.run(action, { flag: 'on' }, ctx);
      expect({ label, ...c }).toMatchObject({ label, ...expected });
      expect([label, calls.execute]).toEqual([label, executes]);
    }
    // A thenable that is not this realm's Promise (another library's, or another realm's) is awaited too:
    // execute gets the value it resolves to.
    const seen: unknown[] = [];
    const thenable = (value: unknown) => ({
      // biome-ignore lint/suspicious/noThenProperty: a promise-like from outside this realm is the point.
      then: (resolve: (r: unknown) => void) => resolve({ value: { ...(value as In), normalized: true } }),
    });
    const { action: viaThenable, runner: thenRunner } = harness({
      input: schema(thenable as unknown as Validate),
      execute: async (input) => {
        seen.push(input);
        return { ok: true };
      },
    });
    expect(await thenRunner.run(viaThenable, { flag: 'on' }, ctx)).toMatchObject({ status: 'verified' });
    expect(seen).toEqual([{ flag: 'on', normalized: true }]);
    for (const validate of [
      () => {
        throw new Error('schema exploded');
      },
      async () => {
        throw new Error('schema exploded');
      },
    ] as Validate[]) {
      const { action, runner, calls } = harness({ input: schema(validate) });
      const c = await runner.run(action, { flag: 'on' }, ctx);
      expect(c).toMatchObject({ status: 'failed', errorCode: 'invalid_input' });
      expect(c.reason).toBe('validation threw: schema exploded');
      expect(calls.execute).toBe(0);
    }
  });

  it('a closed store is misuse and still throws', async () => {
    const store = memoryStore();
    await store.close();
    const { action } = harness({});
    await expect(createRunner({ store, clock: new FakeClock() }).run(action, {}, ctx)).rejects.toMatchObject({
      code: 'store_closed',
    });
  });
});

describe('misuse throws ReadbackError', () => {
  async function rejectsWith(promise: Promise<unknown>, code: string, field?: string) {
    const error = await promise.then(
      () => {
        throw new Error('expected a ReadbackError');
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ReadbackError);
    expect((error as ReadbackError).code).toBe(code);
    if (field) expect((error as ReadbackError).field).toBe(field);
  }

  it('run with something that is not an action', async () => {
    const { runner, action } = harness();
    await rejectsWith(
      runner.run({ ...action, kind: 'other' } as never, {}, ctx),
      'invalid_options',
      'action',
    );
    await rejectsWith(runner.run(null as never, {}, ctx), 'invalid_options');
    await rejectsWith(runner.run({ name: 'x', execute: () => 1 } as never, {}, ctx), 'invalid_options');
  });

  it('run with a context missing runId, or with an empty one', async () => {
    const { runner, action, calls } = harness();
    await rejectsWith(runner.run(action, {}, {} as never), 'invalid_context', 'ctx.runId');
    await rejectsWith(runner.run(action, {}, { runId: '' }), 'invalid_context', 'ctx.runId');
    await rejectsWith(runner.run(action, {}, { runId: 7 } as never), 'invalid_context', 'ctx.runId');
    await rejectsWith(runner.run(action, {}, undefined as never), 'invalid_context', 'ctx');
    expect(calls.execute).toBe(0);
  });

  it('run with a non-string scope value', async () => {
    const { runner, action, calls } = harness();
    await rejectsWith(
      runner.run(action, {}, { runId: 'r', scope: { tenant: 42 } } as never),
      'invalid_context',
      'ctx.scope.tenant',
    );
    await rejectsWith(
      runner.run(action, {}, { runId: 'r', scope: { tenant: undefined } } as never),
      'invalid_context',
      'ctx.scope.tenant',
    );
    expect(calls.execute).toBe(0);
  });

  it('run with an empty idempotency key', async () => {
    const { runner, action } = harness();
    await rejectsWith(
      runner.run(action, {}, { runId: 'r', idempotencyKey: '' }),
      'invalid_context',
      'ctx.idempotencyKey',
    );
  });

  it('poll with an unknown operation id', async () => {
    const { runner } = harness();
    await rejectsWith(runner.poll('op_nope'), 'unknown_operation', 'operationId');
  });

  it.each([
    -1,
    1.5,
    Number.NaN,
    Number.POSITIVE_INFINITY,
  ])('createRunner({ retryBudget: %s })', (retryBudget) => {
    let error: unknown;
    try {
      createRunner({ retryBudget });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ReadbackError);
    expect(error).toMatchObject({ code: 'invalid_options', field: 'retryBudget' });
  });

  it('createRunner accepts a retry budget of zero', () => {
    expect(() => createRunner({ retryBudget: 0 })).not.toThrow();
  });
});

describe('bad options are refused where they are given, before anything runs', () => {
  function thrown(make: () => unknown): ReadbackError {
    let error: unknown;
    try {
      make();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ReadbackError);
    return error as ReadbackError;
  }

  // Each used to be accepted: `store: null` swapped in a memory store (records gone at exit), a typo did the
  // same, the others threw a TypeError in the middle of a run (random: only after execute had run).
  it.each([
    [{ store: null }, 'store', /must be an OperationStore.*missing reserve/],
    [{ store: { reserve: () => undefined } }, 'store', /missing transition, get/],
    [{ stor: {} }, 'stor', /not a runner option; did you mean "store"/],
    [{ clock: {} }, 'clock', /now\(\) and sleep/],
    [{ clock: { now: () => 0, sleep: async () => undefined, deadline: 5 } }, 'clock.deadline', /function/],
    [{ newId: 'op-1' }, 'newId', /must be a function/],
    [{ random: 0.5 }, 'random', /must be a function/],
    [{ actions: {} }, 'actions', /array of actions/],
    // A misspelt `redaction` used to drop the user's own secret rules in silence.
    [
      { trace: { sinks: [{ write() {} }], redact: { keys: ['x'] } } },
      'trace.redact',
      /did you mean "redaction"/,
    ],
  ])('createRunner(%j) is refused, naming %s', (options, field, message) => {
    const error = thrown(() => createRunner(options as never));
    expect(error).toMatchObject({ code: 'invalid_options', field });
    expect(error.message).toMatch(message);
  });

  it.each([
    [{ signal: {} }, 'ctx.signal'],
    [{ signal: 'stop' }, 'ctx.signal'],
    [{ scope: 'acme' }, 'ctx.scope'],
    [{ scope: ['acme'] }, 'ctx.scope'],
    [{ scope: null }, 'ctx.scope'],
    [{ actor: 7 }, 'ctx.actor'],
    [{ wait: 'no' }, 'ctx.wait'],
    [{ turn: 'three' }, 'ctx.turn'],
    [{ toolsExposed: 'set_flag' }, 'ctx.toolsExposed'],
    [{ toolCallId: 12 }, 'ctx.toolCallId'],
  ])('run with %o: invalid_context naming %s, nothing executed or recorded', async (extra, field) => {
    const { action, runner, calls } = harness();
    const error = await runner.run(action, {}, { runId: 'r', ...extra } as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ReadbackError);
    expect(error).toMatchObject({ code: 'invalid_context', field });
    expect(calls).toMatchObject({ execute: 0, observe: 0 });
    // A string scope used to pass the per-value check character by character and be recorded as given.
    expect(await runner.store.list()).toEqual([]);
  });

  it('poll, approve and reconcile refuse malformed options', async () => {
    const { action, runner } = harness({ needsApproval: () => true });
    const parked = await runner.run(action, {}, ctx);
    expect(parked.errorCode).toBe('awaiting_approval');
    const fingerprint = String(parked.evidence?.fingerprint);
    await expect(runner.poll(parked.operationId, { signal: {} as AbortSignal })).rejects.toMatchObject({
      field: 'options.signal',
    });
    await expect(runner.poll(parked.operationId, { wait: 'yes' as never })).rejects.toMatchObject({
      field: 'options.wait',
    });
    await expect(
      runner.approve(parked.operationId, { by: 'maria', note: 42 as never, fingerprint }),
    ).rejects.toMatchObject({ code: 'invalid_options', field: 'decision.note' });
    expect((await runner.store.get(parked.operationId))?.lifecycle).toBe('awaiting_approval');
    for (const [options, field] of [
      [{ once: true, owner: 7 }, 'owner'],
      [{ once: true, onProgress: 'log' }, 'onProgress'],
      [{ once: true, signal: 'stop' }, 'signal'],
      [{ once: 'yes' }, 'once'],
    ] as const) {
      await expect(runner.reconcile(options as never)).rejects.toMatchObject({
        code: 'invalid_options',
        field,
      });
    }
    // Well-formed options still run the pass (the parked operation is not due, so nothing is claimed).
    const report = await runner.reconcile({ once: true, onProgress: () => undefined });
    expect(report).toMatchObject({ errors: 0, claimed: 0 });
  });
});

describe('step timeouts longer than a timer can hold', () => {
  // setTimeout fires after 1 ms for any delay above 2^31-1 ms (~24.8 days): a 35-day verifyTimeoutMs ended
  // every read as verifier_timeout at once.
  it('a 35-day verifyTimeoutMs on the system clock waits for the read', async () => {
    const action = defineAction<In, Obs>({
      name: 'slow_read',
      description: 'Set a flag, read slowly.',
      input: anything,
      target: () => 'flag:1',
      postcondition: 'The flag is on.',
      verifyTimeoutMs: 35 * 24 * 3_600_000,
      execute: async () => ({ ok: true }),
      observe: async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return { flag: 'on' };
      },
      expect: () => ({ flag: 'on' }),
    });
    const c = await createRunner().run(action, {}, ctx);
    expect(c.errorCode).toBeUndefined();
    expect(c.status).toBe('verified');
  });
});
