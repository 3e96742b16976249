/**
 * The design questions the audit asks of every action: six review questions about the
 * postcondition and five about who owns completion. `defineAction` already refuses contracts
 * that cannot run; these ask what a runnable contract can still leave unanswered.
 */
import { DEFAULTS } from '../contract/define.js';
import { asCheck } from '../contract/freshness.js';
import type { AnyAction, Check, StepContext } from '../contract/types.js';
import type { ContractRule } from './contract-file.js';
import { actionMessageProblems, certainUnknownMessage, PROBE_OPERATION_ID } from './messages.js';

/** The id of one audit question. */
export type QuestionId =
  | 'owner'
  | 'identity'
  | 'freshness'
  | 'queue'
  | 'retry'
  | 'messages'
  | 'queued_vs_applied'
  | 'polling_handle'
  | 'enforced_verification'
  | 'uncertain_on_timeout'
  | 'one_retry_budget';

/** One question: its id, which set it belongs to, and how it is asked. */
export interface Question {
  id: QuestionId;
  group: 'review' | 'ownership';
  ask: string;
}

/** Every question, in the order the audit reports them. */
export const QUESTIONS: readonly Question[] = [
  { id: 'owner', group: 'review', ask: 'Which system owns the postcondition?' },
  { id: 'identity', group: 'review', ask: 'What proves the observed record is the requested one?' },
  { id: 'freshness', group: 'review', ask: 'How is a fresh result told from an old one that matches?' },
  { id: 'queue', group: 'review', ask: 'What does a queue response mean for this tool?' },
  { id: 'retry', group: 'review', ask: 'Is a retry after a timeout safe, and who decides?' },
  { id: 'messages', group: 'review', ask: 'Which messages are forbidden for the unresolved statuses?' },
  { id: 'queued_vs_applied', group: 'ownership', ask: 'Does the result tell queued from applied?' },
  {
    id: 'polling_handle',
    group: 'ownership',
    ask: 'Is there a handle to poll asynchronous work to its end?',
  },
  {
    id: 'enforced_verification',
    group: 'ownership',
    ask: 'Is verification enforced before success reaches the model?',
  },
  { id: 'uncertain_on_timeout', group: 'ownership', ask: 'Does a verification timeout end as unknown?' },
  { id: 'one_retry_budget', group: 'ownership', ask: 'Is the retry budget owned in one place?' },
];

/** How a question was answered: by the contract, not at all (debt), or not relevant to this action. */
export type Verdict = 'answered' | 'debt' | 'not_applicable';

/** The answer to one question for one action; `fix` says how to pay a debt. */
export interface Finding {
  question: QuestionId;
  verdict: Verdict;
  answer: string;
  fix?: string;
}

const ok = (question: QuestionId, answer: string): Finding => ({ question, verdict: 'answered', answer });
const na = (question: QuestionId, answer: string): Finding => ({
  question,
  verdict: 'not_applicable',
  answer,
});
const debt = (question: QuestionId, answer: string, fix: string): Finding => ({
  question,
  verdict: 'debt',
  answer,
  fix,
});

const NO_READ = 'optimistic mode: nothing reads the effect back';

// Calls the freshness rule once on an empty record; undefined when there is none or it throws on it.
function probeFresh(action: AnyAction): unknown {
  if (action.fresh === undefined) return undefined;
  const ctx: StepContext = {
    runId: 'audit',
    scope: {},
    signal: new AbortController().signal,
    operationId: PROBE_OPERATION_ID,
    idempotencyKey: 'key_audit_probe',
    attempt: 1,
    startedAt: new Date(0),
  };
  let result: unknown;
  try {
    // The helpers only read fields of the observation; an empty record and no baseline are enough.
    result = action.fresh({}, ctx, {});
  } catch {
    return undefined;
  }
  // An async rule that rejects on the probe must not take the audit down with an unhandled rejection.
  if (isThenable(result)) result.then(undefined, () => {});
  return result;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
  );
}

/** The names of the checks a freshness rule produces on a probe read, or [] when it cannot be probed. */
export function freshnessChecks(action: AnyAction): string[] {
  const result = probeFresh(action);
  if (result === undefined || isThenable(result)) return [];
  const names: string[] = [];
  // A hand-written rule may return a check without a name: only names are collected.
  const visit = (check: Check) => {
    if (typeof check?.name !== 'string') return;
    names.push(check.name);
    if (check.name === 'fresh:all' && Array.isArray(check.observed)) {
      for (const inner of check.observed as Check[])
        if (inner && typeof inner.name === 'string') visit(inner);
    }
  };
  visit(asCheck(result as boolean | Check, 'fresh'));
  return names.filter((n) => n !== 'fresh:all');
}

// Freshness rules that tie the observed record to this very operation, so a timed-out write can be found.
const TIED_TO_OPERATION = ['fresh:idempotency_key', 'fresh:audit_event'];

function owner(action: AnyAction): Finding {
  if (action.system !== undefined) return ok('owner', `system of record: ${action.system}`);
  return debt(
    'owner',
    'no owning system is named',
    "declare `system: '<the system whose read decides the postcondition>'`",
  );
}

// Identity is two comparisons: the record is the requested one (targetOf against target(input)), and it lies in
// the run's scope (scopeOf against ctx.scope). Either missing lets a read of the wrong record pass.
function identity(action: AnyAction): Finding {
  if (action.mode === 'optimistic') {
    return debt(
      'identity',
      `${NO_READ}, so no field identifies the target`,
      'read the target back: use committed or accepted mode',
    );
  }
  const target = action.targetOf !== undefined;
  const scope = action.scopeOf !== undefined;
  if (target && scope) {
    return ok(
      'identity',
      'targetOf(observed) must equal target(input); scopeOf(observed) must match the run scope',
    );
  }
  const fixes = [
    ...(scope ? [] : ['declare scopeOf(observed) so a record from another scope cannot pass']),
    ...(target
      ? []
      : ["declare targetOf(observed) returning the record's target id, so another record cannot pass"]),
  ];
  const answer = !target
    ? `nothing compares the observed record with target(input): a read of another record with matching fields passes${scope ? '' : ', and its scope (tenant, project, environment) is never compared'}`
    : "targetOf(observed) must equal target(input), but the record's scope (tenant, project, environment) is never compared";
  return debt('identity', answer, fixes.join('; '));
}

function freshness(action: AnyAction, checks: string[]): Finding {
  if (action.mode === 'optimistic') {
    return debt(
      'freshness',
      `${NO_READ}, so freshness cannot be judged`,
      'read the target back: use committed or accepted mode',
    );
  }
  if (action.fresh === undefined) {
    return debt(
      'freshness',
      'no freshness rule: an old record that already matched passes as proof',
      'declare fresh: freshness.versionAbove, auditEvent, updatedAfterStart, contentHash or idempotencyKeyIn',
    );
  }
  if (isThenable(probeFresh(action))) {
    return debt(
      'freshness',
      'the fresh rule returns a Promise, which the runner cannot read as a check: a matching read is never proven fresh, so no run ends verified',
      'make fresh synchronous: it judges the observed record, so read what it needs in observe()',
    );
  }
  if (checks.includes('fresh:version_above_baseline') && action.before === undefined) {
    return debt(
      'freshness',
      'freshness.versionAbove needs a baseline, but no before() read is declared: every run ends unknown/stale_read',
      'declare before(input) reading the target before execute',
    );
  }
  const named = checks.map((c) => c.replace(/^fresh:/, '')).join(', ');
  return ok('freshness', `fresh rule${named === '' ? ' (custom)' : `: ${named}`}`);
}

function queue(action: AnyAction): Finding {
  if (action.mode === 'accepted') {
    return ok('queue', 'accepted: a queue reply means pending; terminal(observed) decides the end state');
  }
  if (action.mode === 'committed') {
    const settle =
      action.settle.timeoutMs > 0
        ? `re-read for up to ${action.settle.timeoutMs} ms for lagging reads`
        : 'read-after-write assumed (no settle window)';
    return ok('queue', `committed: execute returns once the effect is durable; ${settle}`);
  }
  return debt(
    'queue',
    'optimistic: no read exists, so every run ends unknown/unverifiable',
    'find a read of the effect (status endpoint, audit log, webhook record) and use accepted mode',
  );
}

function retry(action: AnyAction, checks: string[]): Finding {
  if (action.safeToRepeat === 'unknown') {
    return debt(
      'retry',
      'safeToRepeat is undecided, so nobody owns the decision after a timeout',
      'declare safeToRepeat: true (the provider dedupes) or false (an operator settles unknowns)',
    );
  }
  if (action.safeToRepeat === true) {
    return ok(
      'retry',
      `safe: the runner retries once, only after absence is proven past ${action.maxInFlightMs} ms`,
    );
  }
  const strategy =
    action.idempotencyKey !== undefined
      ? 'idempotencyKey(input, ctx)'
      : checks.find((c) => TIED_TO_OPERATION.includes(c))?.replace(/^fresh:/, 'freshness ');
  if (strategy === undefined) {
    return debt(
      'retry',
      'not safe to repeat, and nothing ties the record to this operation: after a timeout a duplicate cannot be told apart',
      'declare idempotencyKey(input, ctx) and pass it to the provider, or check it with freshness.idempotencyKeyIn',
    );
  }
  return ok(
    'retry',
    `not safe: never re-executed; unknown outcomes go to an operator (found by ${strategy})`,
  );
}

function messages(action: AnyAction, rules: readonly ContractRule[]): Finding {
  const problems = actionMessageProblems(action, rules);
  if (problems.length > 0) {
    return debt(
      'messages',
      problems.join('; '),
      'word unresolved messages as not (yet) done and keep the operation id',
    );
  }
  const overridden = Object.keys(action.messages ?? {});
  const how =
    overridden.length > 0
      ? `default templates, overrides for ${overridden.join(', ')} checked`
      : 'default templates';
  return ok('messages', `completion words only for verified; pending/unknown keep the operation id (${how})`);
}

function queuedVsApplied(action: AnyAction): Finding {
  if (action.mode === 'optimistic') {
    return debt('queued_vs_applied', `${NO_READ}; queued and applied look the same`, 'read the effect back');
  }
  return ok(
    'queued_vs_applied',
    action.mode === 'accepted'
      ? 'accepted(ref) gives pending; only a terminal read gives verified'
      : "execute's reply is recorded, never trusted; only the read-back gives verified",
  );
}

function pollingHandle(action: AnyAction): Finding {
  if (action.mode === 'committed') return na('polling_handle', 'synchronous: nothing to poll');
  if (action.mode === 'optimistic') {
    return debt(
      'polling_handle',
      `${NO_READ}, so there is nothing to poll`,
      'expose a status read and use accepted mode',
    );
  }
  const p = action.poll;
  const defaults = DEFAULTS.poll;
  if (p.maxDurationMs === defaults.maxDurationMs && p.maxReads === defaults.maxReads) {
    return debt(
      'polling_handle',
      `poll budget left at the defaults (${defaults.maxReads} reads, ${defaults.maxDurationMs} ms), not chosen for this provider`,
      "declare poll: { maxDurationMs, maxReads } from the provider's delivery times",
    );
  }
  return ok(
    'polling_handle',
    `operation id + runner.poll(id); budget ${p.maxReads} reads / ${p.maxDurationMs} ms`,
  );
}

function enforcedVerification(action: AnyAction): Finding {
  if (action.mode === 'optimistic') {
    return debt(
      'enforced_verification',
      `${NO_READ}; success can never be verified`,
      'declare observe and expect',
    );
  }
  return ok('enforced_verification', 'observe + expect are required; only the runner can assign verified');
}

function uncertainOnTimeout(action: AnyAction): Finding {
  if (action.mode === 'optimistic')
    return ok('uncertain_on_timeout', 'always unknown/unverifiable, never success');
  const certain = certainUnknownMessage(action);
  if (certain !== undefined) {
    return debt(
      'uncertain_on_timeout',
      `the unknown message override reads as certain: "${certain}"`,
      'say the outcome is unknown and may or may not have happened',
    );
  }
  const budget =
    action.mode === 'accepted'
      ? `verifier timeout ${action.verifyTimeoutMs} ms or an exhausted poll budget`
      : `verifier timeout ${action.verifyTimeoutMs} ms`;
  return ok('uncertain_on_timeout', `${budget} ends unknown with the operation id kept, never failed`);
}

function oneRetryBudget(action: AnyAction): Finding {
  if (action.safeToRepeat === 'unknown') {
    return debt(
      'one_retry_budget',
      'repeat safety undecided: callers above the runner will each decide, stacking budgets',
      'declare safeToRepeat so the runner owns the single retry decision',
    );
  }
  return ok(
    'one_retry_budget',
    action.safeToRepeat
      ? "the runner's single retry, nowhere else"
      : 'no automatic retry; the runner never re-executes',
  );
}

/** Asks every question of one action; `rules` come from a YAML completion contract, when one is given. */
export function askQuestions(action: AnyAction, rules: readonly ContractRule[] = []): Finding[] {
  const checks = freshnessChecks(action);
  return [
    owner(action),
    identity(action),
    freshness(action, checks),
    queue(action),
    retry(action, checks),
    messages(action, rules),
    queuedVsApplied(action),
    pollingHandle(action),
    enforcedVerification(action),
    uncertainOnTimeout(action),
    oneRetryBudget(action),
  ];
}
