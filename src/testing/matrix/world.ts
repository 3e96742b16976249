import { strict as assert } from 'node:assert';
import { defineAction } from '../../contract/define.js';
import type { Action, Completion, NextAllowedAction, RunContext, Status } from '../../contract/types.js';
import { claimsCompletion } from '../../messages/words.js';
import { createRunner, type Runner } from '../../runner/runner.js';
import type { MatrixFaults, MatrixHarness, MatrixInstance } from './types.js';

/** What one completion must show; `errorCode: null` means it must carry none. */
export interface Expected {
  status: Status;
  errorCode?: string | null;
  next?: NextAllowedAction;
  attempt?: number;
}

/** Hooks a case needs, plus the harness inputs some cases need. */
export type Need = keyof MatrixFaults<unknown> | 'otherInput' | 'invalidInput';

// biome-ignore lint/suspicious/noExplicitAny: the observation type is the action's business, not the matrix's.
type AnyOf<I> = Action<I, any>;

/** Counts what the runner really did with the action, independent of what it reports. */
interface Probe {
  executes: number;
  observes: number;
  /** Called once, right after the next execute returns: how the read path breaks "after the write". */
  afterExecute: (() => unknown) | undefined;
}

/**
 * One case's fresh system, runner and probed action, with assertions that name the case step and show
 * the completion, so a failure reads as a finding rather than as `'failed' !== 'verified'`.
 */
export class World<I, S extends MatrixInstance<I>> {
  private base = 0;

  private constructor(
    readonly harness: MatrixHarness<I, S>,
    readonly system: S,
    readonly action: AnyOf<I>,
    readonly runner: Runner,
    private readonly probe: Probe,
    private readonly label: string,
  ) {}

  /** Builds the system and a runner, and wraps the action so executes and reads can be counted. */
  static async open<I, S extends MatrixInstance<I>>(
    harness: MatrixHarness<I, S>,
    label: string,
  ): Promise<World<I, S>> {
    const system = await harness.setup();
    const source = system.action ?? harness.action;
    // Cases were chosen from harness.action, so a per-system action must make the same promises.
    for (const field of ['name', 'mode', 'safeToRepeat', 'maxInFlightMs'] as const) {
      assert.equal(
        source[field],
        harness.action[field],
        `${label}: setup() returned an action whose ${field} differs from harness.action`,
      );
    }
    const probe: Probe = { executes: 0, observes: 0, afterExecute: undefined };
    const runner = system.runner ?? createRunner({ clock: system.clock, random: () => 0.5 });
    assert.equal(runner.clock, system.clock, `${label}: the runner must use the instance's clock`);
    // The matrix runs a counting copy of the action, which a runner that knows the original would refuse.
    assert.equal(
      runner.action(source.name),
      undefined,
      `${label}: the runner already knows an action named "${source.name}"; give each case a fresh runner`,
    );
    const world = new World(harness, system, probed(source, probe), runner, probe, label);
    world.base = await system.effects();
    return world;
  }

  /** Calls a fault hook; the case was skipped unless the harness provides it. */
  async fault<K extends keyof MatrixFaults<S>>(
    name: K,
    ...args: MatrixFaults<S>[K] extends ((system: S, ...rest: infer A) => unknown) | undefined ? A : never
  ): Promise<unknown> {
    const hook = this.harness.faults?.[name] as ((system: S, ...rest: unknown[]) => unknown) | undefined;
    assert.ok(hook, `${this.label}: faults.${String(name)} is missing`);
    return hook.call(this.harness.faults, this.system, ...args);
  }

  /** Switches the read path to `state` the moment the next execute returns. */
  breakReadsAfterExecute(state: 'down' | 'denied' | 'hangs'): void {
    this.probe.afterExecute = () => this.fault('verifier', state);
  }

  /** The run context for this case: the harness's, with any overrides. */
  ctx(extra: Partial<RunContext> = {}): RunContext {
    return { runId: 'readback-matrix', ...this.harness.ctx, ...extra };
  }

  /** Runs the probed action. */
  run(input: unknown = this.harness.input, extra: Partial<RunContext> = {}): Promise<Completion> {
    return this.runner.run(this.action, input, this.ctx(extra));
  }

  /** Polls once; accepted work is followed to a terminal state within its budget. */
  settle(operationId: string): Promise<Completion> {
    return this.runner.poll(operationId, { wait: true });
  }

  /** Moves the shared clock forward. */
  advance(ms: number): void {
    this.system.clock.advance(ms);
  }

  /** Counts effects from now on (after a case arranged pre-existing state). */
  async rebase(): Promise<void> {
    this.base = await this.system.effects();
  }

  /** Asserts a completion's status, code, next action and attempt, and that its message claims only what holds. */
  expect(c: Completion, e: Expected, step: string): void {
    const where = `${this.label}: ${step}: got ${show(c)}`;
    assert.equal(c.status, e.status, `${where}; expected status ${e.status}`);
    if (e.errorCode === null) assert.equal(c.errorCode, undefined, `${where}; expected no error code`);
    else if (e.errorCode !== undefined)
      assert.equal(c.errorCode, e.errorCode, `${where}; expected error code ${e.errorCode}`);
    if (e.next !== undefined)
      assert.equal(c.nextAllowedAction, e.next, `${where}; expected nextAllowedAction ${e.next}`);
    if (e.attempt !== undefined)
      assert.equal(c.attempt, e.attempt, `${where}; expected attempt ${e.attempt}`);
    assert.equal(c.action, this.action.name, `${where}; completion names another action`);
    // The message is what the model repeats: completion words only when the runtime verified the effect.
    assert.equal(
      claimsCompletion(c.message),
      c.status === 'verified',
      `${where}; the message ${c.status === 'verified' ? 'does not claim' : 'claims'} completion: ${c.message}`,
    );
    if (c.status === 'pending' || c.status === 'unknown') {
      assert.ok(
        c.message.includes(c.operationId),
        `${where}; the message must name the operation id to poll`,
      );
    }
  }

  /** Asserts a condition, naming the case and step in the failure. */
  check(ok: boolean, step: string, message: string): void {
    assert.ok(ok, `${this.label}: ${step}: ${message}`);
  }

  /** Asserts deep equality, naming the case and step in the failure. */
  same(actual: unknown, expected: unknown, step: string, message: string): void {
    assert.deepEqual(actual, expected, `${this.label}: ${step}: ${message}`);
  }

  /** Asserts how many times the effect really took hold since the case started. */
  async expectEffects(n: number, step: string, atMost = false): Promise<void> {
    const seen = (await this.system.effects()) - this.base;
    const ok = atMost ? seen <= n : seen === n;
    assert.ok(
      ok,
      `${this.label}: ${step}: effects() counts ${seen}; expected ${atMost ? 'at most ' : ''}${n}`,
    );
  }

  /** Asserts how many times the runner called execute since the case started. */
  expectExecutes(n: number, step: string): void {
    assert.equal(
      this.probe.executes,
      n,
      `${this.label}: ${step}: execute ran ${this.probe.executes} time(s); expected ${n}`,
    );
  }

  /** How many authoritative reads the runner made. */
  get observes(): number {
    return this.probe.observes;
  }
}

/** A copy of the action that counts executes and reads and can break the read path right after execute. */
function probed<I>(action: AnyOf<I>, probe: Probe): AnyOf<I> {
  const { observe } = action;
  return defineAction({
    ...action,
    async execute(input, ctx) {
      probe.executes++;
      const raw = await action.execute(input, ctx);
      const after = probe.afterExecute;
      probe.afterExecute = undefined;
      if (after) await after();
      return raw;
    },
    ...(observe
      ? {
          observe(input: I, ctx: Parameters<typeof observe>[1]) {
            probe.observes++;
            return observe.call(action, input, ctx);
          },
        }
      : {}),
  });
}

function show(c: Completion): string {
  const code = c.errorCode ? ` (${c.errorCode})` : '';
  const reason = c.reason ? `: ${c.reason}` : '';
  return `${c.status}${code}, attempt ${c.attempt}, next ${c.nextAllowedAction}${reason}`;
}
