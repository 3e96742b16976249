/** readback/testing: fakes with fault injection, the completion matrix and the store conformance suite. */
export * from './fakes/index.js';
export * from './helpdesk.js';
export type {
  MatrixCase,
  MatrixClock,
  MatrixFaults,
  MatrixHarness,
  MatrixInstance,
  VerifierState,
  WorkOutcome,
} from './matrix.js';
export { completionMatrix } from './matrix.js';
export { schema } from './schema.js';
export type { ConformanceCase } from './store-conformance.js';
export { storeConformance } from './store-conformance.js';
