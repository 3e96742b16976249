/**
 * Composes an honest final answer from a run's completions: a lead line of counts, then one
 * line per completion, strongest evidence first. The lead line names statuses, never
 * effects, so it makes no claim of its own; every claim comes from a verified completion.
 */
import type { Completion, Status } from '../contract/types.js';
import { defaultMessage } from './templates.js';
import { claimsCompletion } from './words.js';

/** The order statuses are reported in: what is known to hold first, what went wrong last. */
export const SUMMARY_ORDER: readonly Status[] = [
  'verified',
  'no_op',
  'pending',
  'partial',
  'unknown',
  'failed',
];

const LABELS: Record<Exclude<Status, 'verified'>, string> = {
  no_op: 'needed no change',
  pending: 'pending',
  partial: 'partial',
  unknown: 'unknown',
  failed: 'failed',
};

function lineFor(c: Completion): string {
  const own = typeof c.message === 'string' ? c.message.replace(/\s+/g, ' ').trim() : '';
  // A hand-built or stale message that overclaims is replaced rather than repeated.
  const honest = own !== '' && (c.status === 'verified' || !claimsCompletion(own));
  return `- ${honest ? own : defaultMessage(c)}`;
}

function lead(completions: readonly Completion[]): string {
  const count = (s: Status): number => completions.filter((c) => c.status === s).length;
  const total = completions.length;
  const verified = count('verified');
  const noun = total === 1 ? 'action' : 'actions';
  const rest = SUMMARY_ORDER.filter((s): s is Exclude<Status, 'verified'> => s !== 'verified')
    .filter((s) => count(s) > 0)
    .map((s) => `${count(s)} ${LABELS[s]}`);
  return `${verified} of ${total} ${noun} verified${rest.length > 0 ? `; ${rest.join(', ')}` : ''}.`;
}

/** Writes a final answer that states each completion's status and claims nothing the evidence does not. */
export function summarize(all: readonly Completion[]): string {
  // Shadow observations are for operators: they are counted, never reported as outcomes.
  const completions = all.filter((c) => c.shadow === undefined);
  const shadowCount = all.length - completions.length;
  const shadowLine =
    shadowCount === 0
      ? []
      : [
          `${shadowCount} shadow observation${shadowCount === 1 ? ' was' : 's were'} left out: shadow mode is never proof.`,
        ];
  if (completions.length === 0) {
    return shadowCount === 0
      ? 'No state-changing action was run, so there is nothing to report.'
      : `No outcome can be reported: ${shadowLine[0]}`;
  }
  const ordered = SUMMARY_ORDER.flatMap((s) => completions.filter((c) => c.status === s));
  // Completions with a status outside the known set still get a line, at the end.
  const others = completions.filter((c) => !SUMMARY_ORDER.includes(c.status));
  return [lead(completions), ...[...ordered, ...others].map(lineFor), ...shadowLine].join('\n');
}
