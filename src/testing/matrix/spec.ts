import type { MatrixInstance } from './types.js';
import type { Need, World } from './world.js';

/** A case before it is bound to a harness: what it needs, and its body over a fresh world. */
export interface Spec<I, S extends MatrixInstance<I>> {
  name: string;
  needs?: Need[];
  /** Set when the case cannot apply to this action at all, with the reason. */
  skip?: string;
  body(world: World<I, S>): Promise<void>;
}

/** The idempotency key cases use when one key must span several calls. */
export const MATRIX_KEY = 'readback-matrix-key';
