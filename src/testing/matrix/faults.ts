import type { Spec } from './spec.js';
import type { MatrixHarness, MatrixInstance } from './types.js';
import type { World } from './world.js';

/** The verifier comes back: the next poll verifies the effect that already happened, without executing again. */
async function verifiedAfterRecovery<I, S extends MatrixInstance<I>>(w: World<I, S>, operationId: string) {
  await w.fault('verifier', 'ok');
  const later = await w.settle(operationId);
  w.expect(later, { status: 'verified', errorCode: null, next: 'none', attempt: 1 }, 'poll after recovery');
  w.expectExecutes(1, 'poll after recovery');
  await w.expectEffects(1, 'poll after recovery');
}

const VERIFIER_CODES = {
  down: { errorCode: 'verifier_unavailable', next: 'poll' },
  // Re-reading with the same credentials will be denied again: a person has to grant access.
  denied: { errorCode: 'verification_denied', next: 'ask_user' },
  hangs: { errorCode: 'verifier_timeout', next: 'poll' },
} as const;

/** Cases for faults around execute and the read path; which apply depends on the action's mode. */
export function faultSpecs<I, S extends MatrixInstance<I>>(h: MatrixHarness<I, S>): Spec<I, S>[] {
  const { action } = h;
  if (action.mode === 'optimistic') return optimisticSpecs();
  // How long a committed run may keep re-reading on its own before it answers.
  const selfSettle = action.mode === 'committed' ? action.settle.timeoutMs : 0;
  const windowed = action.maxInFlightMs > selfSettle;
  const specs: Spec<I, S>[] = [];

  for (const state of ['down', 'denied', 'hangs'] as const) {
    const { errorCode, next } = VERIFIER_CODES[state];
    if (action.mode === 'committed') {
      specs.push({
        name: `verifier ${state} after execute: unknown (${errorCode}), then verified on poll`,
        needs: ['verifier'],
        async body(w) {
          w.breakReadsAfterExecute(state);
          const c = await w.run();
          w.expect(c, { status: 'unknown', errorCode, next, attempt: 1 }, 'run');
          w.expectExecutes(1, 'run');
          await w.expectEffects(1, 'run');
          await verifiedAfterRecovery(w, c.operationId);
        },
      });
    } else {
      specs.push({
        name: `verifier ${state} while polling: still pending, then verified once it recovers`,
        needs: ['verifier'],
        async body(w) {
          w.breakReadsAfterExecute(state);
          const c = await w.run(w.harness.input, { wait: false });
          w.expect(c, { status: 'pending', errorCode: 'in_progress', next: 'poll', attempt: 1 }, 'run');
          // Polled once due: a poll before `pollAfter` is answered from the record without a read.
          if (c.pollAfter !== undefined)
            w.advance(Math.max(0, Date.parse(c.pollAfter) - w.runner.clock.now()));
          const during = await w.runner.poll(c.operationId);
          w.check(w.observes >= 1, 'poll while down', 'the poll must have tried to read');
          w.expect(during, { status: 'pending', errorCode: 'in_progress', next: 'poll' }, 'poll while down');
          await verifiedAfterRecovery(w, c.operationId);
        },
      });
    }
  }

  if (action.mode === 'accepted') {
    const budgetSpent = (recover: boolean): Spec<I, S> => ({
      name: recover
        ? 'verifier down for the whole poll budget: verified on poll once it recovers'
        : 'verifier down for the whole poll budget: unknown (poll_budget_exhausted), never failed',
      needs: ['verifier'],
      async body(w) {
        w.breakReadsAfterExecute('down');
        const c = await w.run();
        w.expect(
          c,
          { status: 'unknown', errorCode: 'poll_budget_exhausted', next: 'poll', attempt: 1 },
          'run',
        );
        w.check(w.observes <= action.poll.maxReads, 'run', `read ${w.observes} times, over poll.maxReads`);
        w.expectExecutes(1, 'run');
        await w.expectEffects(1, 'run', true);
        if (!recover) return;
        await w.fault('verifier', 'ok');
        const later = await w.settle(c.operationId);
        w.expect(
          later,
          { status: 'verified', errorCode: null, next: 'none', attempt: 1 },
          'poll after recovery',
        );
        await w.expectEffects(1, 'poll after recovery');
      },
    });
    specs.push(budgetSpent(false), budgetSpent(true));
  }

  specs.push(
    {
      name: 'response lost after commit: verified by reading back, not retried',
      needs: ['loseResponse'],
      async body(w) {
        await w.fault('loseResponse');
        const c = await w.run();
        w.expect(c, { status: 'verified', errorCode: null, next: 'none', attempt: 1 }, 'run');
        w.expectExecutes(1, 'run');
        await w.expectEffects(1, 'run');
      },
    },
    {
      name:
        action.safeToRepeat === true
          ? 'request lost: unknown inside the window, retried once after it'
          : 'request lost: unknown inside the window, failed (effect_absent) after it, never retried',
      needs: ['loseRequest'],
      async body(w) {
        await w.fault('loseRequest');
        let c = await w.run();
        w.expectExecutes(1, 'run');
        if (windowed) {
          // Inside the settlement window absence proves nothing, however often it is read.
          w.expect(c, { status: 'unknown', errorCode: 'in_flight', next: 'poll', attempt: 1 }, 'run');
          await w.expectEffects(0, 'run');
          const again = await w.settle(c.operationId);
          w.expect(
            again,
            { status: 'unknown', errorCode: 'in_flight', next: 'poll' },
            'poll inside the window',
          );
          w.expectExecutes(1, 'poll inside the window');
          w.advance(action.maxInFlightMs + 1);
          c = await w.settle(c.operationId);
        }
        const step = 'poll after the window';
        if (action.safeToRepeat === true) {
          w.expect(c, { status: 'verified', errorCode: null, next: 'none', attempt: 2 }, step);
          w.expectExecutes(2, step);
          await w.expectEffects(1, step);
        } else {
          w.expect(c, { status: 'failed', errorCode: 'effect_absent', next: 'ask_user', attempt: 1 }, step);
          w.check(
            c.safeToRepeat === action.safeToRepeat,
            step,
            'an unsafe action must not be offered as repeatable',
          );
          w.expectExecutes(1, step);
          await w.expectEffects(0, step);
        }
      },
    },
    {
      name: 'late landing inside the window: unknown, then verified on poll, no second execute',
      needs: ['landLate'],
      ...(action.maxInFlightMs - selfSettle < 2
        ? { skip: 'the settlement window leaves no room for a late landing the run cannot already see' }
        : {}),
      async body(w) {
        // After anything the run re-reads on its own, before the window closes.
        const ms = Math.floor((selfSettle + action.maxInFlightMs) / 2);
        await w.fault('landLate', ms);
        const c = await w.run();
        w.expect(c, { status: 'unknown', errorCode: 'in_flight', next: 'poll', attempt: 1 }, 'run');
        await w.expectEffects(0, 'run');
        w.advance(ms);
        const later = await w.settle(c.operationId);
        w.expect(
          later,
          { status: 'verified', errorCode: null, next: 'none', attempt: 1 },
          'poll after landing',
        );
        w.expectExecutes(1, 'poll after landing');
        await w.expectEffects(1, 'poll after landing');
      },
    },
  );

  if (action.mode === 'accepted') specs.push(...acceptedSpecs(h));
  return specs;
}

function acceptedSpecs<I, S extends MatrixInstance<I>>(h: MatrixHarness<I, S>): Spec<I, S>[] {
  const { poll } = h.action;
  return [
    {
      name: 'accepted work succeeds: verified',
      needs: ['outcome'],
      async body(w) {
        await w.fault('outcome', 'succeeded');
        const c = await w.run();
        w.expect(c, { status: 'verified', errorCode: null, next: 'none', attempt: 1 }, 'run');
        w.expectExecutes(1, 'run');
        await w.expectEffects(1, 'run');
      },
    },
    {
      name: 'accepted work fails at the provider: failed (provider_failed)',
      needs: ['outcome'],
      async body(w) {
        await w.fault('outcome', 'failed');
        const c = await w.run();
        w.expect(c, { status: 'failed', errorCode: 'provider_failed', next: 'ask_user', attempt: 1 }, 'run');
        w.expectExecutes(1, 'run');
        await w.expectEffects(0, 'run');
      },
    },
    {
      name: 'accepted work never finishes: unknown (poll_budget_exhausted) within the budget',
      needs: ['outcome'],
      async body(w) {
        await w.fault('outcome', 'stuck');
        const started = w.system.clock.now();
        const c = await w.run();
        w.expect(
          c,
          { status: 'unknown', errorCode: 'poll_budget_exhausted', next: 'poll', attempt: 1 },
          'run',
        );
        w.check(w.observes <= poll.maxReads, 'run', `read ${w.observes} times, over poll.maxReads`);
        const spent = w.system.clock.now() - started;
        w.check(spent <= poll.maxDurationMs, 'run', `polled for ${spent} ms, over poll.maxDurationMs`);
        w.expectExecutes(1, 'run');
        await w.expectEffects(0, 'run');
      },
    },
    {
      name: 'wait: false returns pending at once; poll settles it',
      async body(w) {
        const c = await w.run(w.harness.input, { wait: false });
        w.expect(c, { status: 'pending', errorCode: 'in_progress', next: 'poll', attempt: 1 }, 'run');
        w.check(w.observes === 0, 'run', 'wait: false must return before reading');
        const later = await w.settle(c.operationId);
        w.expect(later, { status: 'verified', errorCode: null, next: 'none', attempt: 1 }, 'poll');
        w.expectExecutes(1, 'poll');
        await w.expectEffects(1, 'poll');
      },
    },
  ];
}

/** Optimistic actions have no read path: every fault must still end unknown, and nothing is ever retried. */
function optimisticSpecs<I, S extends MatrixInstance<I>>(): Spec<I, S>[] {
  const lost = (what: 'loseRequest' | 'loseResponse', effects: number): Spec<I, S> => ({
    name: `optimistic: ${what === 'loseRequest' ? 'request' : 'response'} lost: unknown, never retried`,
    needs: [what],
    async body(w) {
      await w.fault(what);
      const c = await w.run();
      w.expect(c, { status: 'unknown', errorCode: 'transport_error', next: 'ask_user', attempt: 1 }, 'run');
      await w.expectEffects(effects, 'run');
      w.advance(w.action.maxInFlightMs + 1);
      w.same(await w.settle(c.operationId), c, 'later poll', 'a poll must return the settled completion');
      w.expectExecutes(1, 'later poll');
      await w.expectEffects(effects, 'later poll');
    },
  });
  return [lost('loseResponse', 1), lost('loseRequest', 0)];
}
