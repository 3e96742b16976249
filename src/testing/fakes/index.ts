// Fake systems with fault injection, shipped from `readback/testing`.
export * from './batch.js';
export * from './fake-clock.js';
export * from './ledger.js';
export * from './mail.js';
export type { CallRecord, CommonFaults, FakeError, FakeOptions } from './shared.js';
export * from './tickets.js';
