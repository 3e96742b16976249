/**
 * The Standard Schema v1 shape, written out structurally so the root export depends on no schema library.
 * zod 4, valibot 1 and arktype 2 schemas all satisfy it.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>;
    readonly types?: { readonly input: Input; readonly output: Output } | undefined;
  };
}

/** One validation result in Standard Schema form. */
export type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<StandardIssue> };

/** One validation issue in Standard Schema form. */
export interface StandardIssue {
  readonly message: string;
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
}

/** The output type a Standard Schema produces. */
export type InferOutput<S> = S extends StandardSchemaV1<unknown, infer O> ? O : never;

/** True when `value` looks like a Standard Schema v1 validator. */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false;
  const std = (value as { '~standard'?: { version?: unknown; validate?: unknown } })['~standard'];
  return typeof std === 'object' && std !== null && std.version === 1 && typeof std.validate === 'function';
}

/** What `validateInput` gives: the output, or a list of `path: message` strings. */
export type Validated<O> = { ok: true; value: O } | { ok: false; issues: string[] };

/**
 * Validates `value`: the output or a list of `path: message` strings, as a promise only when the
 * validator is asynchronous (most answer at once, and a promise would cost every call a turn).
 */
export function validateInput<O>(
  schema: StandardSchemaV1<unknown, O>,
  value: unknown,
): Validated<O> | Promise<Validated<O>> {
  const result = schema['~standard'].validate(value);
  // Any thenable counts as asynchronous (and becomes a native promise), not only this realm's Promise.
  if (typeof (result as { then?: unknown }).then === 'function') {
    return Promise.resolve(result).then(toValidated);
  }
  return toValidated(result as StandardResult<O>);
}

function toValidated<O>(result: StandardResult<O>): Validated<O> {
  if (result.issues === undefined) return { ok: true, value: result.value };
  return { ok: false, issues: result.issues.map(formatIssue) };
}

function formatIssue(issue: StandardIssue): string {
  const path = (issue.path ?? [])
    .map((segment) => (typeof segment === 'object' && segment !== null ? segment.key : segment))
    .map(String)
    .join('.');
  return path ? `${path}: ${issue.message}` : issue.message;
}
