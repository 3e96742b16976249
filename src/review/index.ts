/** The incident review: normalized incident model, input adapters, analysis, repairs and fixtures. */
export { readIncident, TRACE_ADAPTERS, type TraceAdapter } from './adapters.js';
export { type Finding, type ReviewResult, review, type Where } from './analyze.js';
export {
  buildFixture,
  incidentFromFixture,
  MESSAGE_CLASS,
  type ReviewFixture,
  readFixture,
} from './fixture.js';
export type { Incident, IncidentCall, Location } from './model.js';
export { CLASS_LABELS, FAILURE_CLASSES, type FailureClass, type Recovery } from './repair.js';
export { renderReview, reviewJson } from './report.js';
export { incidentFromStore } from './store-adapter.js';
