/** Codes carried by every error readback throws; outcomes are never thrown, only misuse is. */
export type ReadbackErrorCode =
  | 'invalid_contract'
  | 'invalid_options'
  | 'invalid_context'
  | 'unknown_action'
  | 'unknown_operation'
  | 'store_conflict'
  | 'unstorable_value'
  | 'approval_mismatch'
  | 'not_awaiting_approval'
  | 'already_settled'
  | 'store_closed';

/** The error class for programmer and configuration mistakes; `code` is stable, `field` names what was wrong. */
export class ReadbackError extends Error {
  override readonly name = 'ReadbackError';
  readonly code: ReadbackErrorCode;
  readonly field: string | undefined;

  constructor(code: ReadbackErrorCode, message: string, field?: string) {
    super(field ? `${field}: ${message}` : message);
    this.code = code;
    this.field = field;
  }
}

/** Throws `invalid_options` (or `code`) naming `field` unless `value` is absent or a boolean. */
export function optionalBoolean(
  value: unknown,
  field: string,
  code: 'invalid_options' | 'invalid_context' = 'invalid_options',
): void {
  if (value !== undefined && typeof value !== 'boolean')
    throw new ReadbackError(code, 'must be true or false', field);
}

/** Throws `invalid_options` naming `field` unless `value` is absent or a function. */
export function optionalFunction(value: unknown, field: string): void {
  if (value !== undefined && typeof value !== 'function') {
    throw new ReadbackError('invalid_options', 'must be a function', field);
  }
}

/** Thrown by an `observe` read to say the verifier was refused access (reported as `verification_denied`). */
export class VerificationDenied extends Error {
  override readonly name = 'VerificationDenied';
}

/** True when an error from a verifier means "access denied" rather than "unavailable". */
export function isDenial(error: unknown): boolean {
  if (error instanceof VerificationDenied) return true;
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { status?: unknown; statusCode?: unknown; code?: unknown };
  const status = e.status ?? e.statusCode;
  if (status === 401 || status === 403) return true;
  return (
    e.code === 'EACCES' || e.code === 'EPERM' || e.code === 'permission_denied' || e.code === 'forbidden'
  );
}
