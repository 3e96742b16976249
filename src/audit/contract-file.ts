/**
 * The YAML completion contract: a team-level document that says what each status means, which
 * completion fields are required, which rules bind the final message, and the message templates.
 * This module parses and validates it by hand so every problem names its path and line.
 */
import { isMap, isScalar, LineCounter, parseDocument } from 'yaml';
import { STATUSES, type Status } from '../contract/types.js';

/** Completion fields a contract may require, in the contract's snake_case spelling. */
export const COMPLETION_FIELDS = [
  'status',
  'action',
  'target',
  'operation_id',
  'idempotency_key',
  'attempt',
  'postcondition',
  'mode',
  'observed_at',
  'evidence',
  'checks',
  'units',
  'error_code',
  'reason',
  'next_allowed_action',
  'safe_to_repeat',
  'message',
] as const;

/** A completion field name as a contract writes it. */
export type CompletionField = (typeof COMPLETION_FIELDS)[number];

/** Placeholders a message template may use: `{operation_id}`, `{target}`, ... */
export const PLACEHOLDERS = [
  'action',
  'target',
  'status',
  'operation_id',
  'postcondition',
  'observed_at',
  'observed_state',
  'reason',
  'error_code',
  'required',
  'passed',
  'failed',
  'next_allowed_action',
] as const;

/** A placeholder name usable in templates and in a rule's `require`. */
export type Placeholder = (typeof PLACEHOLDERS)[number];

/** One rule: its text, and optionally the statuses it binds with words to forbid and placeholders to keep. */
export interface ContractRule {
  rule: string;
  when?: Status[];
  forbid?: string[];
  require?: Placeholder[];
}

/** What a postcondition must name; each entry is the team's description of how it is given. */
export interface PostconditionTemplate {
  /** The target identity: what `target(input)` names and `targetOf(observed)` must read back. */
  target: string;
  expected: string;
  freshness: string;
  scope: string;
}

/** A validated completion contract file. */
export interface CompletionContract {
  purpose?: string;
  statuses: Record<Status, string>;
  requiredFields: CompletionField[];
  rules: ContractRule[];
  postconditionTemplate: PostconditionTemplate;
  messageTemplates: Record<Status, string>;
}

/** One problem in a contract file: where (path, and line/column when known) and what is wrong. */
export interface ContractProblem {
  path: string;
  message: string;
  line?: number;
  col?: number;
}

/** The outcome of reading a contract file: the contract, or every problem found. */
export type ContractParseResult =
  | { ok: true; contract: CompletionContract }
  | { ok: false; problems: ContractProblem[] };

type Path = (string | number)[];

/** Renders a path as `rules[2].when`. */
export function formatPath(path: readonly (string | number)[]): string {
  let out = '';
  for (const part of path) out += typeof part === 'number' ? `[${part}]` : out === '' ? part : `.${part}`;
  return out === '' ? '(root)' : out;
}

/** One problem as a line: `file:3:5: rules[2].when: expected a status name`. */
export function formatProblem(problem: ContractProblem, source?: string): string {
  const at = problem.line !== undefined ? `${problem.line}:${problem.col ?? 1}` : '';
  const where = [source, at].filter((s) => s !== undefined && s !== '').join(':');
  return `${where === '' ? '' : `${where}: `}${problem.path}: ${problem.message}`;
}

const PLACEHOLDER = /\{([^{}]*)\}/g;

/** The placeholders a template uses, in order of appearance. */
export function placeholdersOf(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!);
}

/**
 * Parses and validates a YAML completion contract. Malformed YAML reports the parser's line and
 * column; a well-formed document that breaks the schema reports every offending path.
 */
export function parseCompletionContract(text: string): ContractParseResult {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  // The parser's warnings (an unresolved `!tag`, a bad directive) are kept as errors: read past, the tagged
  // value would pass as plain text the author did not mean.
  const errors = [...doc.errors, ...doc.warnings];
  if (errors.length > 0) {
    // The first syntax error is the cause; the parser's later ones mostly follow from it.
    const [first, ...rest] = errors;
    const more =
      rest.length > 0 ? ` (and ${rest.length} more error${rest.length === 1 ? '' : 's'} after it)` : '';
    return {
      ok: false,
      problems: [
        {
          path: '(yaml)',
          message: `malformed YAML: ${first!.message} [${first!.code}]${more}`,
          ...lineCounter.linePos(first!.pos[0]),
        },
      ],
    };
  }
  let root: unknown;
  try {
    root = doc.toJS();
  } catch (error) {
    // The parser refuses to expand an alias bomb (a few lines that would expand to millions of nodes).
    return {
      ok: false,
      problems: [{ path: '(yaml)', message: `cannot be read: ${(error as Error).message}` }],
    };
  }
  const checker = new Checker();
  const contract = checker.contract(root);
  if (checker.problems.length > 0 || contract === undefined) {
    // Point each problem at the YAML node it is about, or at the nearest enclosing one that exists.
    for (const problem of checker.problems) {
      for (let path = [...problem.at]; ; path.pop()) {
        const node =
          problem.onKey && path.length === problem.at.length ? keyNode(doc, path) : nodeAt(doc, path);
        const range = (node as { range?: [number, number, number] } | null | undefined)?.range;
        if (range) {
          Object.assign(problem, lineCounter.linePos(range[0]));
          break;
        }
        if (path.length === 0) break;
      }
    }
    return {
      ok: false,
      problems: checker.problems.map(({ at, onKey, ...problem }) => problem),
    };
  }
  return { ok: true, contract };
}

type Doc = ReturnType<typeof parseDocument>;

function nodeAt(doc: Doc, path: Path): unknown {
  return path.length === 0 ? doc.contents : doc.getIn(path, true);
}

// The key of a mapping entry, for problems about the key itself (an unknown or misspelled name).
function keyNode(doc: Doc, path: Path): unknown {
  const parent = nodeAt(doc, path.slice(0, -1));
  const name = path[path.length - 1];
  if (!isMap(parent)) return undefined;
  // Keys are strings in the checked value: `1:` is "1" there, and a null key (`~:`) is "".
  return parent.items.find((pair) => isScalar(pair.key) && String(pair.key.value ?? '') === name)?.key;
}

const ROOT = 'completion_contract';
const KEYS = [
  'purpose',
  'statuses',
  'required_fields',
  'rules',
  'postcondition_template',
  'message_templates',
];
const RULE_KEYS = ['rule', 'when', 'forbid', 'require'];
const TEMPLATE_KEYS: (keyof PostconditionTemplate)[] = ['target', 'expected', 'freshness', 'scope'];

function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return typeof value === 'string' ? JSON.stringify(value) : `${typeof value} ${String(value)}`;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Collects problems instead of stopping at the first, so one run shows everything to fix.
class Checker {
  readonly problems: (ContractProblem & { at: Path; onKey: boolean })[] = [];

  private report(at: Path, message: string, onKey = false): void {
    this.problems.push({ at, onKey, path: formatPath(at), message });
  }

  contract(root: unknown): CompletionContract | undefined {
    if (!isMapping(root)) {
      this.report([], `expected a mapping with one key, "${ROOT}"; got ${describe(root)}`);
      return undefined;
    }
    for (const key of Object.keys(root)) {
      if (key !== ROOT) this.report([key], `unknown key; the file holds one "${ROOT}:" mapping`, true);
    }
    if (!(ROOT in root)) {
      this.report([], `missing "${ROOT}:", the mapping that holds the contract`);
      return undefined;
    }
    if (!isMapping(root[ROOT])) {
      this.report([ROOT], `expected a mapping; got ${describe(root[ROOT])}`);
      return undefined;
    }
    const body = root[ROOT];
    const at: Path = [ROOT];
    this.unknownKeys(body, at, KEYS);
    const purpose = body.purpose === undefined ? undefined : this.text(body.purpose, [...at, 'purpose']);
    const contract: CompletionContract = {
      ...(purpose !== undefined ? { purpose } : {}),
      statuses: this.statusMap(body.statuses, [...at, 'statuses'], 'a one-line meaning'),
      requiredFields: this.requiredFields(body.required_fields, [...at, 'required_fields']),
      rules: this.rules(body.rules, [...at, 'rules']),
      postconditionTemplate: this.postconditionTemplate(body.postcondition_template, [
        ...at,
        'postcondition_template',
      ]),
      messageTemplates: this.messageTemplates(body.message_templates, [...at, 'message_templates']),
    };
    return this.problems.length === 0 ? contract : undefined;
  }

  private unknownKeys(value: Record<string, unknown>, at: Path, known: readonly string[]): void {
    for (const key of Object.keys(value)) {
      if (!known.includes(key))
        this.report([...at, key], `unknown key; expected one of ${known.join(', ')}`, true);
    }
  }

  private text(value: unknown, at: Path): string {
    if (typeof value !== 'string' || value.trim() === '') {
      this.report(at, `expected a non-empty string; got ${describe(value)}`);
      return '';
    }
    return value;
  }

  // A rule is one sentence: a folded or literal block (`rule: >`) keeps line breaks that would split the
  // one-line findings quoting it.
  private sentence(value: unknown, at: Path): string {
    return this.text(value, at).replace(/\s+/g, ' ').trim();
  }

  private list(value: unknown, at: Path): unknown[] {
    if (!Array.isArray(value)) {
      this.report(at, `expected a list; got ${describe(value)}`);
      return [];
    }
    return value;
  }

  private statusName(value: unknown, at: Path): Status | undefined {
    if (typeof value === 'string' && (STATUSES as readonly string[]).includes(value)) return value as Status;
    this.report(at, `expected a status name (${STATUSES.join(', ')}); got ${describe(value)}`);
    return undefined;
  }

  private statusMap(value: unknown, at: Path, what: string): Record<Status, string> {
    const out = {} as Record<Status, string>;
    if (!isMapping(value)) {
      this.report(at, `expected a mapping of each status to ${what}; got ${describe(value)}`);
      return out;
    }
    for (const [key, entry] of Object.entries(value)) {
      if (!(STATUSES as readonly string[]).includes(key)) {
        this.report([...at, key], `not a readback status; expected one of ${STATUSES.join(', ')}`, true);
      } else {
        out[key as Status] = this.text(entry, [...at, key]);
      }
    }
    const missing = STATUSES.filter((s) => !(s in value));
    if (missing.length > 0) this.report(at, `missing ${missing.join(', ')}: every status needs ${what}`);
    return out;
  }

  private requiredFields(value: unknown, at: Path): CompletionField[] {
    const out: CompletionField[] = [];
    this.list(value, at).forEach((item, i) => {
      if (typeof item !== 'string' || !(COMPLETION_FIELDS as readonly string[]).includes(item)) {
        this.report(
          [...at, i],
          `expected a completion field (${COMPLETION_FIELDS.join(', ')}); got ${describe(item)}`,
        );
      } else if (out.includes(item as CompletionField)) {
        this.report([...at, i], `"${item}" is listed twice`);
      } else {
        out.push(item as CompletionField);
      }
    });
    if (Array.isArray(value) && !out.includes('status')) this.report(at, 'must include "status"');
    return out;
  }

  private rules(value: unknown, at: Path): ContractRule[] {
    const items = this.list(value, at);
    if (Array.isArray(value) && items.length === 0) this.report(at, 'expected at least one rule');
    return items.map((item, i) => this.rule(item, [...at, i]));
  }

  private rule(value: unknown, at: Path): ContractRule {
    if (typeof value === 'string') return { rule: this.sentence(value, at) };
    if (!isMapping(value)) {
      this.report(
        at,
        `expected a rule: a sentence, or a mapping with "rule" and optional "when"; got ${describe(value)}`,
      );
      return { rule: '' };
    }
    this.unknownKeys(value, at, RULE_KEYS);
    const out: ContractRule = { rule: this.sentence(value.rule, [...at, 'rule']) };
    if (value.when !== undefined) {
      const when = Array.isArray(value.when)
        ? value.when.map((s, i) => this.statusName(s, [...at, 'when', i]))
        : [this.statusName(value.when, [...at, 'when'])];
      // An empty list binds no status: its forbid and require would silently check nothing.
      if (Array.isArray(value.when) && value.when.length === 0)
        this.report([...at, 'when'], 'expected at least one status name; an empty list binds nothing');
      out.when = when.filter((s): s is Status => s !== undefined);
    }
    if (value.forbid !== undefined) {
      out.forbid = this.list(value.forbid, [...at, 'forbid']).map((w, i) =>
        this.text(w, [...at, 'forbid', i]),
      );
    }
    if (value.require !== undefined) {
      out.require = this.list(value.require, [...at, 'require']).flatMap((p, i) => {
        if (typeof p === 'string' && (PLACEHOLDERS as readonly string[]).includes(p))
          return [p as Placeholder];
        this.report(
          [...at, 'require', i],
          `expected a placeholder name (${PLACEHOLDERS.join(', ')}); got ${describe(p)}`,
        );
        return [];
      });
    }
    if ((out.forbid !== undefined || out.require !== undefined) && value.when === undefined) {
      this.report(
        [...at, 'when'],
        'is required when a rule has "forbid" or "require": name the statuses it binds',
      );
    }
    return out;
  }

  private postconditionTemplate(value: unknown, at: Path): PostconditionTemplate {
    const out: PostconditionTemplate = { target: '', expected: '', freshness: '', scope: '' };
    if (!isMapping(value)) {
      this.report(at, `expected a mapping with ${TEMPLATE_KEYS.join(', ')}; got ${describe(value)}`);
      return out;
    }
    this.unknownKeys(value, at, TEMPLATE_KEYS);
    for (const key of TEMPLATE_KEYS) out[key] = this.text(value[key], [...at, key]);
    return out;
  }

  private messageTemplates(value: unknown, at: Path): Record<Status, string> {
    const out = this.statusMap(value, at, 'a message template');
    for (const [status, template] of Object.entries(out)) {
      for (const name of placeholdersOf(template)) {
        if (!(PLACEHOLDERS as readonly string[]).includes(name)) {
          this.report(
            [...at, status],
            `unknown placeholder {${name}}; expected one of ${PLACEHOLDERS.map((p) => `{${p}}`).join(', ')}`,
          );
        }
      }
    }
    return out;
  }
}
