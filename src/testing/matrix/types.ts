import type { Clock } from '../../clock.js';
import type { Action, RunContext } from '../../contract/types.js';
import type { Runner } from '../../runner/runner.js';

/** A clock the matrix can move forward by hand and the runner sleeps on; `FakeClock` fits. */
export interface MatrixClock extends Clock {
  advance(ms: number): void;
}

/** What a harness's verifier hook switches the read path to. */
export type VerifierState = 'down' | 'denied' | 'hangs' | 'ok';

/** How queued work ends, for accepted-mode actions. */
export type WorkOutcome = 'succeeded' | 'failed' | 'stuck';

/** One fresh system under test, built per case by `MatrixHarness.setup`. */
export interface MatrixInstance<I = unknown> {
  /** The clock the runner and the fake system share; the matrix advances it to cross settlement windows. */
  clock: MatrixClock;
  /** The action bound to this system, when actions close over their system (default: `harness.action`). */
  // biome-ignore lint/suspicious/noExplicitAny: the observation type is the action's business, not the matrix's.
  action?: Action<I, any>;
  /**
   * A runner on `clock` that has not seen this action yet (default: a fresh runner with fixed jitter);
   * keep a retry budget of at least 1, which the request-lost case expects of safe-to-repeat actions.
   */
  runner?: Runner;
  /**
   * Ground truth: how many times the requested effect really took hold in the system, read from the fake's
   * own effect log (never from the runner). For accepted work, count only work that finished successfully.
   * Any baseline is fine: the matrix compares counts from the start of each case.
   */
  effects(): number | Promise<number>;
}

/** Optional fault hooks, each given the case's system; a case whose hook is missing comes back with `skip`. */
export interface MatrixFaults<S> {
  // One-shot hooks affect only the next execute; `verifier` and `outcome` hold until switched again.
  /** Put the target into the requested state beforehand, so the call has nothing to do. */
  alreadySatisfied?(system: S): void | Promise<void>;
  /** The next execute answers ok but applies nothing. */
  softFail?(system: S): void | Promise<void>;
  /** The next execute is lost before the provider sees it (it throws, nothing applies). */
  loseRequest?(system: S): void | Promise<void>;
  /** The next execute applies, then its response is lost (it throws, the effect stays). */
  loseResponse?(system: S): void | Promise<void>;
  /** The next execute throws now and applies `ms` later (always inside the action's settlement window). */
  landLate?(system: S, ms: number): void | Promise<void>;
  /** The next execute is refused by the provider; returns the error code the action reports for it. */
  reject?(system: S): string | Promise<string>;
  /** Switches the read path; the matrix calls it right after execute returns, then with `'ok'` to recover. */
  verifier?(system: S, state: VerifierState): void | Promise<void>;
  /** Accepted mode: how the work queued by the next execute ends. */
  outcome?(system: S, outcome: WorkOutcome): void | Promise<void>;
}

/** Everything `completionMatrix` needs to run the standard fault cases against one action. */
export interface MatrixHarness<I, S extends MatrixInstance<I> = MatrixInstance<I>> {
  /** Prefixed to every case name, e.g. the tool's name. */
  name?: string;
  /** The action's contract; its mode, `safeToRepeat` and timing choose the cases and their expectations. */
  // biome-ignore lint/suspicious/noExplicitAny: the observation type is the action's business, not the matrix's.
  action: Action<I, any>;
  /** A valid input that changes state. */
  input: I;
  /** A different valid intent, for the idempotency-conflict case. */
  otherInput?: I;
  /** An input the action's schema refuses, for the validation case. */
  invalidInput?: unknown;
  /** Merged into every run's context (`runId` defaults to `readback-matrix`). */
  ctx?: Partial<RunContext>;
  /** Builds a fresh system for one case. */
  setup(): S | Promise<S>;
  /** The faults this system can inject; each missing hook skips the cases that need it. */
  faults?: MatrixFaults<S>;
}

/** One self-contained case; `run` rejects (with a `node:assert` error) when the action breaks its contract. */
export interface MatrixCase {
  name: string;
  run(): Promise<void>;
  /** Why the case cannot run for this harness (a missing hook or input); run it with your runner's skip. */
  skip?: string;
}
