/** Problems found while reading an incident from some input: each names where and which field. */

/** One problem with the input, located as precisely as the input allows. */
export interface InputIssue {
  /** 1-based line of a JSONL trace, when the input has lines. */
  line?: number;
  /** The field at fault (`text`, `call`, `status`), or undefined for the whole record. */
  field?: string;
  message: string;
}

/** Reading an input succeeds with a value or fails with every issue found, never with a throw. */
export type ReadOutcome<T> = { ok: true; value: T } | { ok: false; issues: InputIssue[] };

/** One issue as a line of text: "line 3: field 'call': names no earlier tool_call". */
export function describeIssue(issue: InputIssue): string {
  const where = [
    issue.line !== undefined ? `line ${issue.line}` : undefined,
    issue.field !== undefined ? `field '${issue.field}'` : undefined,
  ].filter((p) => p !== undefined);
  return where.length > 0 ? `${where.join(': ')}: ${issue.message}` : issue.message;
}
