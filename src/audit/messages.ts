/**
 * Message checks for the audit: which words each unresolved status may not use, probed on the
 * actual message overrides of an action and on the templates of a YAML contract. A probe draft
 * stands in for a real completion, so a template is judged by the text it really produces.
 */
import type { AnyAction, CompletionDraft, Status } from '../contract/types.js';
import { formMessage } from '../messages/templates.js';
import { claimsCompletion, findClaims, maskQuoted, splitSentences } from '../messages/words.js';
import { type ContractRule, type Placeholder, placeholdersOf } from './contract-file.js';

/** Statuses whose message must not say the effect happened. */
export const UNRESOLVED: readonly Status[] = ['pending', 'failed', 'partial', 'no_op', 'unknown'];

/** Statuses whose message must keep the operation id, so someone can follow the work up. */
export const NEEDS_OPERATION_ID: readonly Status[] = ['pending', 'unknown'];

/** The operation id a probe draft carries, looked for in the formed message. */
export const PROBE_OPERATION_ID = 'op_audit_probe';

// Words that say the outcome is not known, which an `unknown` message has to convey:
// "unknown", "may not have", "not sure whether", "we can't tell if it went out".
const UNCERTAIN =
  /\b(unknown|uncertain|unclear|undetermined|unverified|unconfirmed|unsure|not sure|whether|may|might|not (?:yet )?(?:known|verified|confirmed|determined|clear)|(?:could(?: not|n['’]t)|can(?:not| not|['’]t)) (?:be )?(?:tell|say|confirm|verify|determine|know|determined|verified|confirmed)|(?:do|does|did)(?: not|n['’]t) know)\b/i;

/** A probe completion draft for one status, with every field a template might read. */
export function probeDraft(action: AnyAction, status: Status): CompletionDraft {
  return {
    status,
    action: action.name,
    target: 'probe:target-1',
    operationId: PROBE_OPERATION_ID,
    idempotencyKey: 'key_audit_probe',
    attempt: 1,
    postcondition: action.postcondition,
    mode: action.mode,
    observedAt: '2026-01-01T00:00:00.000Z',
    evidence: { state: 'probe' },
    checks: [{ name: 'probe_check', pass: status === 'verified' }],
    ...(status === 'partial'
      ? { units: { required: 2, passed: 1, failed: 1, failedTargets: ['probe:target-2'] } }
      : {}),
    ...(status === 'failed' || status === 'unknown'
      ? { errorCode: 'probe_code', reason: 'probe reason' }
      : {}),
    nextAllowedAction: status === 'pending' ? 'poll' : 'none',
    safeToRepeat: action.safeToRepeat,
  };
}

/** The first completion word a text claims, outside quotes and code spans, if any. */
export function firstClaim(text: string): string | undefined {
  for (const sentence of splitSentences(text)) {
    const claim = findClaims(sentence)[0];
    if (claim !== undefined) return claim.word;
  }
  return undefined;
}

/** True when a text says the outcome is not known (an `unknown` message must). */
export function conveysUncertainty(text: string): boolean {
  return UNCERTAIN.test(text);
}

/** The words of `forbid` that a text uses outside quoted and code spans, case-insensitive. */
export function forbiddenWordsIn(text: string, forbid: readonly string[]): string[] {
  const plain = maskQuoted(text).toLowerCase();
  return forbid.filter((word) => {
    const escaped = word.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    return new RegExp(`(?<![\\w-])${escaped}(?![\\w-])`).test(plain);
  });
}

/** The rules that bind a status. */
export function rulesFor(rules: readonly ContractRule[], status: Status): ContractRule[] {
  return rules.filter((r) => r.when?.includes(status));
}

/** The value a placeholder takes in a probe draft, to look for it in a formed message. */
function probeValue(draft: CompletionDraft, placeholder: Placeholder): string | undefined {
  const values: Partial<Record<Placeholder, unknown>> = {
    action: draft.action,
    target: draft.target,
    status: draft.status,
    operation_id: draft.operationId,
    postcondition: draft.postcondition,
    observed_at: draft.observedAt,
    reason: draft.reason,
    error_code: draft.errorCode,
  };
  const value = values[placeholder];
  return typeof value === 'string' ? value : undefined;
}

/** Problems with the messages one action would hand a model for its unresolved statuses. */
export function actionMessageProblems(action: AnyAction, rules: readonly ContractRule[]): string[] {
  const problems: string[] = [];
  for (const status of UNRESOLVED) {
    if (action.messages?.[status] === undefined) continue;
    const draft = probeDraft(action, status);
    const formed = formMessage(draft, action.messages);
    if (formed.overrideRejected !== undefined) {
      problems.push(`${formed.overrideRejected}; the runtime would fall back to the default`);
      continue;
    }
    const text = formed.message;
    if (NEEDS_OPERATION_ID.includes(status) && !text.includes(PROBE_OPERATION_ID)) {
      problems.push(
        `the ${status} message override drops the operation id, so nobody can follow the work up`,
      );
    }
    for (const rule of rulesFor(rules, status)) {
      const words = forbiddenWordsIn(text, rule.forbid ?? []);
      if (words.length > 0) {
        problems.push(
          `the ${status} message override uses ${words.map((w) => `"${w}"`).join(', ')}, forbidden by "${rule.rule}"`,
        );
      }
      for (const placeholder of rule.require ?? []) {
        const value = probeValue(draft, placeholder);
        if (value !== undefined && !text.includes(value)) {
          problems.push(
            `the ${status} message override leaves out {${placeholder}}, required by "${rule.rule}"`,
          );
        }
      }
    }
  }
  return problems;
}

// Placeholders stand for reported values, which the claim finder reads as quoted text.
function asReportedText(template: string): string {
  return template.replace(/\{([^{}]*)\}/g, (_m, name: string) => `\`${name}\``);
}

/** The formed `unknown` override of an action when it reads as certain (a timeout worded as a failure), else undefined. */
export function certainUnknownMessage(action: AnyAction): string | undefined {
  if (action.messages?.unknown === undefined) return undefined;
  const formed = formMessage(probeDraft(action, 'unknown'), action.messages);
  // A refused override falls back to the default, which says "unknown"; the messages question reports it.
  if (formed.overrideRejected !== undefined) return undefined;
  return conveysUncertainty(formed.message) ? undefined : formed.message;
}

/** Problems with a YAML contract's message template for one status. */
export function templateProblems(status: Status, template: string, rules: readonly ContractRule[]): string[] {
  const problems: string[] = [];
  const used = placeholdersOf(template);
  if (status !== 'verified' && claimsCompletion(asReportedText(template))) {
    problems.push(`claims completion ("${firstClaim(asReportedText(template))}") for a ${status} outcome`);
  }
  if (NEEDS_OPERATION_ID.includes(status) && !used.includes('operation_id')) {
    problems.push('leaves out {operation_id}, so an unresolved operation cannot be followed up');
  }
  if (status === 'unknown' && !conveysUncertainty(template)) {
    problems.push('does not say the outcome is unknown or may not have happened');
  }
  for (const rule of rulesFor(rules, status)) {
    const words = forbiddenWordsIn(asReportedText(template), rule.forbid ?? []);
    if (words.length > 0)
      problems.push(`uses ${words.map((w) => `"${w}"`).join(', ')}, forbidden by "${rule.rule}"`);
    for (const placeholder of rule.require ?? []) {
      if (!used.includes(placeholder))
        problems.push(`leaves out {${placeholder}}, required by "${rule.rule}"`);
    }
  }
  return problems;
}
