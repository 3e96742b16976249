import type { PollPolicy } from '../contract/types.js';

/** Delay before poll read number `read` (0-based): exponential from initialDelayMs, capped, with jitter. */
export function pollDelay(policy: PollPolicy, read: number, random: () => number): number {
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(read, 30));
  // Jitter spreads many pollers out so they do not hit the provider in lockstep. The injected `random` is held
  // to [0, 1]: a NaN would make every delay NaN (a timer that fires at once, a stored nextPollAt of NaN), and a
  // value outside the range a negative or a longer-than-capped delay.
  const r = random();
  const unit = r > 0 ? Math.min(r, 1) : 0;
  return Math.round(base * (1 - policy.jitter * unit));
}
