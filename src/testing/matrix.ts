import { isAction } from '../contract/define.js';
import { ReadbackError } from '../errors.js';
import { coreSpecs } from './matrix/core.js';
import { faultSpecs } from './matrix/faults.js';
import type { MatrixCase, MatrixHarness, MatrixInstance } from './matrix/types.js';
import { World } from './matrix/world.js';

export type {
  MatrixCase,
  MatrixClock,
  MatrixFaults,
  MatrixHarness,
  MatrixInstance,
  VerifierState,
  WorkOutcome,
} from './matrix/types.js';

/**
 * Builds the standard completion fault cases for one action: the cases that apply to its mode, each on a
 * fresh system from `harness.setup()`, asserting with `node:assert` so any test runner can run them:
 * `for (const c of completionMatrix(h)) (c.skip ? it.skip : it)(c.name, c.run)`.
 */
export function completionMatrix<I, S extends MatrixInstance<I>>(harness: MatrixHarness<I, S>): MatrixCase[] {
  if (typeof harness !== 'object' || harness === null) {
    throw new ReadbackError('invalid_options', 'expected a harness object', 'harness');
  }
  if (!isAction(harness.action)) {
    throw new ReadbackError('invalid_options', 'expected an action made by defineAction()', 'harness.action');
  }
  if (typeof harness.setup !== 'function') {
    throw new ReadbackError(
      'invalid_options',
      'must be a function returning a fresh system',
      'harness.setup',
    );
  }
  const label = harness.name ?? harness.action.name;
  const prefix = harness.name ? `${harness.name}: ` : '';
  return [...coreSpecs(harness), ...faultSpecs(harness)].map((spec) => {
    const skip = spec.skip ?? missing(harness, spec.needs ?? []);
    return {
      name: `${prefix}${spec.name}`,
      async run() {
        await spec.body(await World.open(harness, `${label}, ${spec.name}`));
      },
      ...(skip ? { skip } : {}),
    };
  });
}

/** Names the first hook or input the case needs that the harness does not provide. */
function missing<I, S extends MatrixInstance<I>>(
  harness: MatrixHarness<I, S>,
  needs: readonly string[],
): string | undefined {
  for (const need of needs) {
    if (need === 'otherInput' || need === 'invalidInput') {
      if (harness[need] === undefined) return `needs harness.${need}`;
    } else if (typeof (harness.faults as Record<string, unknown> | undefined)?.[need] !== 'function') {
      return `needs the faults.${need} hook`;
    }
  }
  return undefined;
}
