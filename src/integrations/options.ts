/**
 * Checks shared by the agent integrations' constructors (`registerActions`, `agentTools`, `aiTools`), so a
 * wrong argument fails at creation with a `ReadbackError` naming it, not with a TypeError, a tool the SDK
 * silently drops, or a per-action setting that never applies. No framework imports here.
 */
import { isAction } from '../contract/define.js';
import type { AnyAction } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import type { Runner } from '../runner/runner.js';

/** Throws unless `runner` looks like one made by `createRunner()` (a wrapped runner with the same methods passes). */
export function checkRunner(runner: unknown): asserts runner is Runner {
  const r = runner as Partial<Record<keyof Runner, unknown>> | null | undefined;
  if (
    typeof r !== 'object' ||
    r === null ||
    typeof r.run !== 'function' ||
    typeof r.register !== 'function' ||
    typeof r.inShadow !== 'function'
  ) {
    throw new ReadbackError('invalid_options', 'expected a runner made by createRunner()', 'runner');
  }
}

/**
 * The actions of a list or of a record, each checked: made by `defineAction()`, and no tool name given
 * twice (the model calls tools by name, so a second one would shadow the first or be refused by the SDK).
 * Per-action settings must name a listed action: a misspelt name would otherwise be ignored in silence.
 */
export function actionList(
  actions: readonly AnyAction[] | Record<string, AnyAction>,
  perAction: Record<string, unknown> | undefined,
): AnyAction[] {
  if (typeof actions !== 'object' || actions === null) {
    throw new ReadbackError(
      'invalid_options',
      'expected an array of actions, or an object of actions by key',
      'actions',
    );
  }
  const entries: [string, unknown][] = Array.isArray(actions)
    ? actions.map((action, i) => [`actions[${i}]`, action])
    : Object.entries(actions).map(([key, action]) => [`actions.${key}`, action]);
  const seen = new Map<string, string>();
  for (const [where, action] of entries) {
    if (!isAction(action)) {
      throw new ReadbackError('invalid_options', 'expected an action made by defineAction()', where);
    }
    const first = seen.get(action.name);
    if (first !== undefined) {
      throw new ReadbackError(
        'invalid_options',
        `the tool name "${action.name}" is also given by ${first}`,
        where,
      );
    }
    seen.set(action.name, where);
  }
  for (const name of Object.keys(perAction ?? {})) {
    if (!seen.has(name)) {
      throw new ReadbackError(
        'invalid_options',
        `no listed action is named "${name}" (listed: ${[...seen.keys()].join(', ') || 'none'})`,
        `options.actions.${name}`,
      );
    }
  }
  return entries.map(([, action]) => action as AnyAction);
}
