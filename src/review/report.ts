/** Renders a review for a human (short, in the order an incident review reads) and as JSON. */
import type { ReviewResult } from './analyze.js';
import { describeLocation } from './model.js';
import { CLASS_LABELS } from './repair.js';

function clip(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

const WHERE_LABEL = {
  tool_call: 'tool call',
  tool_result: 'tool result (adapter)',
  readback_message: 'status message (formatter)',
  final_answer: 'final answer',
} as const;

/** The human report: request, first unsupported transition and its location, class, first repair, recovery. */
export function renderReview(result: ReviewResult): string {
  const lines: string[] = [
    `review of ${result.source} (${result.calls} tool call${result.calls === 1 ? '' : 's'})`,
    '',
  ];
  lines.push(
    result.request
      ? `request      ${describeLocation(result.request.at)}: "${clip(result.request.text)}"`
      : 'request      (not in the input)',
  );
  const first = result.first;
  if (first === undefined) {
    lines.push('', 'no unsupported transition: every claim is backed by its evidence', '');
    return lines.join('\n');
  }
  const subject = first.action ? ` of ${first.action} on ${first.target}` : '';
  lines.push(
    '',
    'first unsupported transition',
    `  at         ${describeLocation(first.at)}, ${WHERE_LABEL[first.where]}${subject}`,
    first.word !== undefined
      ? `  claim      "${first.word}" in "${clip(first.claim)}"`
      : `  claim      "${clip(first.claim)}" (${first.claimLevel})`,
  );
  if (first.evidence) {
    lines.push(`  evidence   ${clip(first.evidence.summary)} [${describeLocation(first.evidence.at)}]`);
  }
  lines.push(
    `  why        ${clip(first.detail, 400)}`,
    '',
    `class        ${CLASS_LABELS[first.class]}`,
    `first repair ${first.repair}`,
    `recovery     ${first.recovery.path.replace('_', ' ')} (safe to retry: ${String(first.recovery.safeToRetry)}): ${first.recovery.step}`,
  );
  const later = result.findings.slice(1);
  if (later.length > 0) {
    lines.push('', `later unsupported claims (${later.length})`);
    for (const f of later.slice(0, 5)) {
      lines.push(`  ${describeLocation(f.at)}: ${CLASS_LABELS[f.class]}: "${clip(f.claim, 80)}"`);
    }
    if (later.length > 5) lines.push(`  … and ${later.length - 5} more (see --json)`);
  }
  lines.push('');
  return lines.join('\n');
}

/** The review as JSON, with the class's human label next to each code. */
export function reviewJson(result: ReviewResult): string {
  const withLabel = <T extends { class: keyof typeof CLASS_LABELS }>(f: T) => ({
    ...f,
    classLabel: CLASS_LABELS[f.class],
  });
  return `${JSON.stringify(
    {
      ...result,
      supported: result.first === undefined,
      ...(result.first ? { first: withLabel(result.first) } : {}),
      findings: result.findings.map(withLabel),
    },
    null,
    2,
  )}\n`;
}
