/** The run record: typed trace events, redaction and sinks (no dependencies beyond Node built-ins). */

export type * from './events.js';
export { TRACE_FORMAT_VERSION } from './events.js';
export type { RedactionOptions, RedactionRule, Redactor } from './redact.js';
export { createRedactor } from './redact.js';
export type { JsonlSink, JsonlSinkOptions, SinkOptions } from './sinks.js';
export { callbackSink, jsonlSink } from './sinks.js';
