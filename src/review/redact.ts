/**
 * Redaction of an incident before anything is printed or written: a store keeps each operation's raw
 * input and raw result (the runner needs them to recover it), and a tracer may log arguments raw, but a
 * review's report is pasted into incidents and its fixture is committed. The same rules as the run record.
 */
import { createRedactor, type Redactor } from '../trace/redact.js';
import type { Incident, IncidentCall } from './model.js';

function redactCall(call: IncidentCall, r: Redactor): IncidentCall {
  const out: IncidentCall = { ...call, args: r.redact(call.args), target: r.redact(call.target) };
  if (call.result !== undefined) {
    out.result = {
      ...call.result,
      raw: r.redact(call.result.raw),
      ...(call.result.error !== undefined ? { error: r.redact(call.result.error) } : {}),
    };
  }
  const rb = call.readback;
  if (rb !== undefined) {
    out.readback = {
      ...rb,
      checks: r.redact(rb.checks),
      ...(rb.observed !== undefined ? { observed: r.redact(rb.observed) } : {}),
      ...(rb.reason !== undefined ? { reason: r.redact(rb.reason) } : {}),
      ...(rb.message !== undefined ? { message: r.redact(rb.message) } : {}),
    };
  }
  return out;
}

/** A copy of the incident with secret-looking keys and values redacted (the built-in rules of `src/trace`). */
export function redactIncident(incident: Incident, redactor: Redactor = createRedactor()): Incident {
  const out: Incident = { ...incident, calls: incident.calls.map((c) => redactCall(c, redactor)) };
  if (incident.request) out.request = { ...incident.request, text: redactor.redact(incident.request.text) };
  if (incident.answer) out.answer = { ...incident.answer, text: redactor.redact(incident.answer.text) };
  return out;
}
