import type { Completion } from '../../contract/types.js';
import { MATRIX_KEY, type Spec } from './spec.js';
import type { MatrixHarness, MatrixInstance } from './types.js';
import type { World } from './world.js';

/** Runs the harness input and asserts the result a clean call must give in this mode. */
async function cleanRun<I, S extends MatrixInstance<I>>(w: World<I, S>, step: string, key?: string) {
  const c = await w.run(w.harness.input, key ? { idempotencyKey: key } : {});
  expectClean(w, c, step);
  return c;
}

function expectClean<I, S extends MatrixInstance<I>>(w: World<I, S>, c: Completion, step: string): void {
  if (w.action.mode === 'optimistic') {
    // No verifier exists, so even a call that certainly went out stays unknown.
    w.expect(c, { status: 'unknown', errorCode: 'unverifiable', next: 'ask_user', attempt: 1 }, step);
  } else {
    w.expect(c, { status: 'verified', errorCode: null, next: 'none', attempt: 1 }, step);
  }
}

/** Cases that hold in every mode, plus the clean, no-op and mismatch cases of verifiable modes. */
export function coreSpecs<I, S extends MatrixInstance<I>>(h: MatrixHarness<I, S>): Spec<I, S>[] {
  const { mode } = h.action;
  const specs: Spec<I, S>[] = [];

  if (mode === 'optimistic') {
    specs.push({
      name: 'optimistic: a call that went out is never verified',
      async body(w) {
        const c = await cleanRun(w, 'run');
        w.expectExecutes(1, 'run');
        await w.expectEffects(1, 'run');
        // Settled for good: polling cannot promote it, because nothing can be read back.
        w.same(await w.settle(c.operationId), c, 'later poll', 'a poll must return the settled completion');
      },
    });
  } else {
    specs.push(
      {
        name: 'verified change: executes once, reads back, says so',
        async body(w) {
          const c = await cleanRun(w, 'run');
          w.check(c.observedAt !== undefined, 'run', 'a verified completion must carry the time of its read');
          w.check(w.observes >= 1, 'run', 'verified without a single read of the system');
          w.expectExecutes(1, 'run');
          await w.expectEffects(1, 'run');
        },
      },
      {
        name: 'already satisfied: no_op, nothing executed',
        needs: ['alreadySatisfied'],
        ...(h.action.before
          ? {}
          : { skip: 'the action has no before() baseline read, so it can never report no_op' }),
        async body(w) {
          await w.fault('alreadySatisfied');
          await w.rebase();
          const c = await w.run();
          w.expect(c, { status: 'no_op', errorCode: null, next: 'none', attempt: 0 }, 'run');
          w.expectExecutes(0, 'run');
          await w.expectEffects(0, 'run');
        },
      },
      {
        name: 'write says ok but applies nothing: not verified',
        needs: ['softFail'],
        async body(w) {
          await w.fault('softFail');
          const c = await w.run();
          if (mode === 'committed') {
            w.expect(
              c,
              { status: 'failed', errorCode: 'readback_mismatch', next: 'repair', attempt: 1 },
              'run',
            );
          } else if (c.status === 'failed') {
            // Accepted work that never shows up is either seen wrong (failed) or never seen (unknown).
            w.expect(c, { status: 'failed', errorCode: 'readback_mismatch', attempt: 1 }, 'run');
          } else {
            w.expect(c, { status: 'unknown', errorCode: 'poll_budget_exhausted', attempt: 1 }, 'run');
          }
          w.expectExecutes(1, 'run');
          await w.expectEffects(0, 'run');
        },
      },
    );
  }

  specs.push(
    {
      name: 'invalid input: failed before anything runs',
      needs: ['invalidInput'],
      async body(w) {
        const c = await w.run(w.harness.invalidInput);
        w.expect(c, { status: 'failed', errorCode: 'invalid_input', next: 'repair', attempt: 0 }, 'run');
        w.check(c.safeToRepeat === true, 'run', 'nothing ran, so repeating a corrected call must be safe');
        w.expectExecutes(0, 'run');
        await w.expectEffects(0, 'run');
      },
    },
    {
      name: 'known rejection: failed with the provider code, nothing applied',
      needs: ['reject'],
      async body(w) {
        const answer = await w.fault('reject');
        const code = typeof answer === 'string' ? answer : '';
        w.check(code !== '', 'arrange', 'faults.reject must return the error code the action reports');
        const c = await w.run();
        w.expect(c, { status: 'failed', errorCode: code, next: 'repair', attempt: 1 }, 'run');
        w.expectExecutes(1, 'run');
        await w.expectEffects(0, 'run');
      },
    },
    {
      name: 'same key, same input twice: one effect, the same completion',
      async body(w) {
        const first = await cleanRun(w, 'first run', MATRIX_KEY);
        const again = await w.run(w.harness.input, { idempotencyKey: MATRIX_KEY });
        w.same(again, first, 'second run', 'a repeated call must return the recorded completion');
        w.expectExecutes(1, 'second run');
        await w.expectEffects(1, 'second run');
      },
    },
    {
      name: 'same key, another input: idempotency_conflict, no second effect',
      needs: ['otherInput'],
      ...separateKeys(h),
      async body(w) {
        const first = await cleanRun(w, 'first run', MATRIX_KEY);
        const other = await w.run(w.harness.otherInput, { idempotencyKey: MATRIX_KEY });
        w.expect(
          other,
          { status: 'failed', errorCode: 'idempotency_conflict', next: 'repair', attempt: 0 },
          'second run',
        );
        w.check(
          other.operationId === first.operationId,
          'second run',
          'the conflict must name the original operation',
        );
        w.expectExecutes(1, 'second run');
        await w.expectEffects(1, 'second run');
      },
    },
    {
      name: 'five concurrent runs with one key: one effect',
      async body(w) {
        const runs = await Promise.all(
          Array.from({ length: 5 }, () => w.run(w.harness.input, { idempotencyKey: MATRIX_KEY })),
        );
        for (const c of runs) {
          expectClean(w, c, 'concurrent run');
          w.check(
            c.operationId === runs[0]!.operationId,
            'concurrent run',
            'duplicates must share one operation',
          );
        }
        w.expectExecutes(1, 'concurrent runs');
        await w.expectEffects(1, 'concurrent runs');
      },
    },
  );
  return specs;
}

/** The conflict case is moot when the action's own key function already gives `otherInput` its own key. */
function separateKeys<I, S extends MatrixInstance<I>>(h: MatrixHarness<I, S>): { skip?: string } {
  if (!h.action.idempotencyKey || h.otherInput === undefined) return {};
  const ctx = { runId: 'readback-matrix', ...h.ctx, idempotencyKey: MATRIX_KEY };
  try {
    if (h.action.idempotencyKey(h.input, ctx) === h.action.idempotencyKey(h.otherInput, ctx)) return {};
  } catch {
    return {};
  }
  return { skip: 'action.idempotencyKey() gives otherInput a key of its own, so the two cannot conflict' };
}
