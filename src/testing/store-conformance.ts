import type { OperationStore } from '../store/types.js';
import { claimsCases } from './conformance/claims.js';
import { isolationCases } from './conformance/isolation.js';
import { listingCases } from './conformance/listing.js';
import { reserveCases } from './conformance/reserve.js';
import type { CaseBody } from './conformance/support.js';
import { transitionCases } from './conformance/transition.js';

/** One named, self-contained check of an `OperationStore`; `run` rejects when the store breaks the contract. */
export interface ConformanceCase {
  name: string;
  run(): Promise<void>;
}

/** Builds the conformance cases every `OperationStore` backend must pass; each case opens and closes its own store. */
export function storeConformance(
  makeStore: () => OperationStore | Promise<OperationStore>,
): ConformanceCase[] {
  const test = ([name, body]: CaseBody): ConformanceCase => ({
    name,
    async run() {
      const store = await makeStore();
      try {
        await body(store);
      } catch (error) {
        // Report the contract failure, not a secondary error from closing a store in a bad state.
        await store.close().catch(() => undefined);
        throw error;
      }
      await store.close();
    },
  });

  return [...reserveCases, ...transitionCases, ...listingCases, ...claimsCases, ...isolationCases].map(test);
}
