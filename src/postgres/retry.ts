import { ReadbackError } from '../errors.js';

/** How a store that opened its own pool rides out lost connections; see `postgresStore`'s `reconnect`. */
export interface ReconnectOptions {
  /** Retries after the first failure before the error is thrown (default 10; 0 turns retrying off). */
  retries?: number;
  /** The first backoff step in ms (default 100); each retry doubles it, up to `maxMs`. */
  baseMs?: number;
  /** The largest single backoff step in ms (default 5000). */
  maxMs?: number;
}

/** A validated reconnect policy; `sleep` and `random` are injectable for tests. */
export interface ReconnectPolicy {
  retries: number;
  baseMs: number;
  maxMs: number;
  sleep: (ms: number) => Promise<void>;
  random: () => number;
}

// With full jitter the expected total wait is about half the sum of the steps: 100 ms doubling to 5 s over
// 10 retries sums to ~26 s at worst, which rides out a restart or failover of a few seconds.
const DEFAULTS = { retries: 10, baseMs: 100, maxMs: 5_000 };

/** Checks `options` and fills in the defaults. */
export function reconnectPolicy(options: ReconnectOptions = {}): ReconnectPolicy {
  const policy = { ...DEFAULTS, ...options };
  for (const field of ['retries', 'baseMs', 'maxMs'] as const) {
    const value = policy[field];
    if (!Number.isInteger(value) || value < 0) {
      throw new ReadbackError('invalid_options', 'must be a whole number ≥ 0', `reconnect.${field}`);
    }
  }
  return {
    ...policy,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    random: Math.random,
  };
}

// SQLSTATEs that mean "this connection is gone or the server is not taking connections right now":
// class 08 (connection exception), 57P01 admin_shutdown (also what pg_terminate_backend sends),
// 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up or shutting down), and 53300
// too_many_connections, which the server only sends while refusing a new connection.
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300']);
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
// pg reports a socket that closed under a query, or a client it already knows is broken, without a code.
const PG_MESSAGES = new Set([
  'Connection terminated unexpectedly',
  'Client has encountered a connection error and is not queryable',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
]);

/** True when `error` says the connection (not the statement) failed, so the statement may be retried. */
export function isConnectionError(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown; errors?: unknown } | null;
  if (e === null || typeof e !== 'object') return false;
  if (typeof e.code === 'string') {
    if (SERVER_CODES.has(e.code) || SOCKET_CODES.has(e.code) || /^08[0-9A-Z]{3}$/.test(e.code)) return true;
  }
  if (typeof e.message === 'string' && PG_MESSAGES.has(e.message)) return true;
  // Connecting to a name with several addresses fails with an AggregateError of per-address errors.
  return Array.isArray(e.errors) && e.errors.some(isConnectionError);
}

/**
 * Runs `attempt` and, while it fails with a connection error, waits a jittered, doubling backoff and
 * runs it again, at most `policy.retries` more times. `attempt` is told whether this is a retry, so a
 * write can first find out whether its earlier try committed. Any other error is thrown at once.
 * The first try's promise is returned as it is when there is no policy, and only gets a `catch` when
 * there is one: the common case pays no extra promise.
 */
export function withReconnect<T>(
  policy: ReconnectPolicy | undefined,
  attempt: (retry: boolean) => Promise<T>,
): Promise<T> {
  let first: Promise<T>;
  try {
    first = attempt(false);
  } catch (error) {
    first = Promise.reject(error);
  }
  return policy === undefined ? first : first.catch((error: unknown) => retryAfter(policy, error, attempt));
}

// The rest of withReconnect once the first try failed with `error`.
async function retryAfter<T>(
  policy: ReconnectPolicy,
  error: unknown,
  attempt: (retry: boolean) => Promise<T>,
): Promise<T> {
  for (let failures = 0; ; failures++) {
    if (failures >= policy.retries || !isConnectionError(error)) throw error;
    // Full jitter: many processes that lost the same server do not all come back at the same instant.
    const step = Math.min(policy.maxMs, policy.baseMs * 2 ** failures);
    await policy.sleep(Math.round(step * policy.random()));
    try {
      return await attempt(true);
    } catch (next) {
      error = next;
    }
  }
}
