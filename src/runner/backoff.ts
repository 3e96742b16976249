import type { PollPolicy } from '../contract/types.js';

/** Delay before poll read number `read` (0-based): exponential from initialDelayMs, capped, with jitter. */
export function pollDelay(policy: PollPolicy, read: number, random: () => number): number {
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(read, 30));
  // Jitter spreads many pollers out so they do not hit the provider in lockstep.
  return Math.round(base * (1 - policy.jitter * random()));
}
