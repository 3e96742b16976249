import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { extname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MAX_TIMER_MS } from '../clock.js';
import { isAction } from '../contract/define.js';
import type { AnyAction } from '../contract/types.js';
import type { ReconcileReport } from '../runner/reconcile.js';
import { createRunner } from '../runner/runner.js';
import { startsAtHome } from '../sqlite/driver.js';
import { type CliIO, type Command, type ParsedArgs, UsageError } from './args.js';
import { demoActions, isDemoStore } from './demo-state.js';
import { CommandError, intFlag, printable, stringFlag } from './format.js';
import { DEFAULT_STORE, openStore, type PostgresOpenOptions } from './store.js';

/** The Postgres store options `reconcile` takes as flags (see `PostgresStoreOptions`). */
type PostgresFlags = PostgresOpenOptions;

/**
 * The shortest `--lease-ms`: a lease is renewed every third of it, and a renewal is a store round trip, so a
 * lease much shorter lapses between renewals, and another reconciler takes over work still being read. It
 * also catches seconds given as milliseconds (`--lease-ms 60`).
 */
export const MIN_LEASE_MS = 250;

/**
 * A duration flag in milliseconds, from `min` to the longest delay Node's timers keep (about 24.8 days; a
 * longer one fires at once). A value that is no whole number gets `intFlag`'s words; the range is checked here.
 */
export function msFlag(
  flags: Record<string, string | boolean | undefined>,
  name: string,
  min: number,
): number | undefined {
  const raw = stringFlag(flags, name);
  if (raw !== undefined && /^\d+$/.test(raw.trim())) {
    const ms = Number(raw);
    if (ms < min || ms > MAX_TIMER_MS) {
      throw new UsageError(
        `option '--${name}' needs a whole number of milliseconds from ${min} to ${MAX_TIMER_MS}; got '${raw}'`,
      );
    }
  }
  return intFlag(flags, name, Math.min(min, 1));
}

const POSTGRES_URL = /^postgres(ql)?:\/\//i;
const POSTGRES_FLAGS = ['lease-clock', 'reconnect-retries', 'reconnect-base-ms', 'reconnect-max-ms'] as const;

/** Reads the Postgres-only flags; undefined when none is given. They make no sense for a SQLite file. */
export function postgresFlags(
  flags: Record<string, string | boolean | undefined>,
  storeSpec: string,
): PostgresFlags | undefined {
  const given = POSTGRES_FLAGS.filter((name) => flags[name] !== undefined);
  if (given.length === 0) return undefined;
  if (!POSTGRES_URL.test(storeSpec)) {
    throw new UsageError(`option '--${given[0]}' applies only to a postgres:// store`);
  }
  const options: PostgresFlags = {};
  const clock = flags['lease-clock'];
  if (clock !== undefined) {
    if (clock !== 'database' && clock !== 'caller') {
      throw new UsageError(`option '--lease-clock' needs 'database' or 'caller'; got '${String(clock)}'`);
    }
    options.leaseClock = clock;
  }
  const retries = intFlag(flags, 'reconnect-retries', 0);
  // Backoff steps are timer delays: one past Node's limit would fire at once and retry in a tight loop.
  const baseMs = msFlag(flags, 'reconnect-base-ms', 0);
  const maxMs = msFlag(flags, 'reconnect-max-ms', 0);
  if (retries === 0) {
    // 0 retries is "fail at once"; backoff steps that would never be used are then a mistake worth naming.
    if (baseMs !== undefined || maxMs !== undefined) {
      throw new UsageError(
        "'--reconnect-retries 0' turns retrying off; drop the other --reconnect-* options",
      );
    }
    options.reconnect = false;
  } else if (retries !== undefined || baseMs !== undefined || maxMs !== undefined) {
    options.reconnect = {
      ...(retries !== undefined ? { retries } : {}),
      ...(baseMs !== undefined ? { baseMs } : {}),
      ...(maxMs !== undefined ? { maxMs } : {}),
    };
  }
  return options;
}

/** Installs a stop handler and returns its remover; the default listens for SIGINT and SIGTERM. */
export type StopHook = (stop: () => void) => () => void;

const processSignals: StopHook = (stop) => {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    // A second signal means "now": the operator no longer wants to wait for in-flight reads. Their records
    // stay as last written, under a lease that lapses after --lease-ms, when any reconciler reads them back.
    if (stopping) {
      process.stderr.write(
        `readback: ${signal} again; exiting now, in-flight leases lapse after --lease-ms\n`,
      );
      process.exit(signal === 'SIGINT' ? 130 : 143);
    }
    stopping = true;
    // Said at once: in-flight reads can take a while, and silence looks like the signal was lost.
    process.stderr.write(`readback: ${signal}; stopping after in-flight work (send it again to exit now)\n`);
    stop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
};

/**
 * Every action a module exports: exported actions, and actions inside exported arrays or plain objects one
 * level deep (`export const actions = { sendEmail, refund }`). The same action exported twice counts once.
 */
export function collectActions(mod: Record<string, unknown>): AnyAction[] {
  return [...locateActions(mod).keys()];
}

// Each action a module exports, with where it was first found (`tools.billing[0]`), to name it in errors.
function locateActions(mod: Record<string, unknown>): Map<AnyAction, string> {
  const found = new Map<AnyAction, string>();
  const seen = new Set<object>();
  // Actions grouped as a module likes them (`export const tools = { billing: { refund } }`): missing one
  // would let `audit` report a module clean, and `reconcile` leave its operations undriven. Only arrays and
  // plain objects are entered (not a client or a pool exported beside the actions), to a bounded depth.
  const walk = (value: unknown, depth: number, where: string): void => {
    if (isAction(value)) {
      if (!found.has(value as AnyAction)) found.set(value as AnyAction, where);
      return;
    }
    if (typeof value !== 'object' || value === null || seen.has(value) || depth > MAX_EXPORT_DEPTH) return;
    const proto = Object.getPrototypeOf(value);
    if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) return;
    seen.add(value);
    for (const [key, item] of Object.entries(value)) {
      walk(item, depth + 1, Array.isArray(value) ? `${where}[${key}]` : `${where}.${key}`);
    }
  };
  for (const [name, value] of Object.entries(mod)) walk(value, 1, name);
  return found;
}

const MAX_EXPORT_DEPTH = 6;

// readback's own code (dist/ when built, src/ under tests): frames in it are not where the user's module failed.
const OWN_CODE = fileURLToPath(new URL('../', import.meta.url));

// Node's message for a module that throws while loading, or does not parse, names no line; find one: the
// first stack frame outside readback, or for a syntax error (whose stack has none) `node --check`'s answer.
function failedAt(error: unknown, path: string): string {
  const stack = error instanceof Error ? (error.stack ?? '') : '';
  for (const [, url, line, column] of stack.matchAll(/(file:\/\/[^\s()]+):(\d+):(\d+)\)?$/gm)) {
    const file = fileURLToPath(url!);
    if (!file.startsWith(OWN_CODE)) return ` (at ${file}:${line}:${column})`;
  }
  if (!(error instanceof SyntaxError)) return '';
  const check = spawnSync(process.execPath, ['--check', path], { encoding: 'utf8', timeout: 10_000 });
  const line = /:(\d+)$/.exec(check.stderr?.split(/\r?\n/, 1)[0] ?? '')?.[1];
  return line === undefined ? '' : ` (at ${path}:${line})`;
}

// A bare name (`lodash`, `@acme/tools`) is what `import` would resolve as a package; --actions takes a file.
// A name ending in a script extension (`actions.js`) is a file name, mistyped or missing, not a package.
const PACKAGE_NAME = /^(?:@[\w.-]+\/)?[\w][\w.-]*(?:\/[\w.-]+)*$/;
const SCRIPT_FILE = /\.[cm]?[jt]sx?$/i;

/** Imports an actions module by path (relative to the working directory) and collects its actions. */
export async function loadActions(modulePath: string): Promise<AnyAction[]> {
  return [...(await loadModule(modulePath)).keys()];
}

// The module's actions with where each is exported; every way of naming a module that cannot work is a
// usage error naming it, and only a module that fails while loading is an error of the module (exit 1).
async function loadModule(modulePath: string): Promise<Map<AnyAction, string>> {
  if (modulePath.trim() === '') throw new UsageError('actions module path is empty; name the module file');
  const path = modulePathOf(modulePath);
  if (!existsSync(path)) {
    const bare =
      !isAbsolute(modulePath) &&
      !modulePath.startsWith('.') &&
      PACKAGE_NAME.test(modulePath) &&
      !SCRIPT_FILE.test(modulePath);
    throw new UsageError(
      `actions module not found: ${modulePath}${
        bare
          ? ' (a package name is not looked up: give the path to its module file, e.g. ./node_modules/…)'
          : ''
      }`,
    );
  }
  if (statSync(path).isDirectory()) {
    throw new UsageError(`actions module ${modulePath} is a directory; name the module file (index.js, say)`);
  }
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (error) {
    // Node loads JavaScript only (TypeScript needs a loader such as `node --import tsx`): the wrong file was named.
    if ((error as { code?: unknown }).code === 'ERR_UNKNOWN_FILE_EXTENSION') {
      throw new UsageError(
        `actions module ${modulePath} is not a JavaScript module (${extname(path) || 'no extension'}); name the compiled .js/.mjs file`,
      );
    }
    throw loadFailed(modulePath, error, path);
  }
  let actions: Map<AnyAction, string>;
  try {
    actions = locateActions(mod);
  } catch (error) {
    // An export read through a getter or a Proxy runs the module's own code, which can throw: that is the
    // module failing to load as much as a top-level throw is, not a readback bug worth a stack.
    throw loadFailed(modulePath, error, path);
  }
  if (actions.size === 0) {
    throw new UsageError(
      `actions module ${modulePath} exports no actions; export the results of defineAction() (directly, or in an array or object)`,
    );
  }
  return actions;
}

// One line naming the module, the error and where it was thrown; a message with line breaks (or terminal escapes)
// is escaped, so the line cannot be taken for several. There is no stack: the location is what a user needs.
function loadFailed(modulePath: string, error: unknown, path: string): CommandError {
  const message = printable(error instanceof Error ? error.message : String(error));
  return new CommandError(`could not load actions module ${modulePath}: ${message}${failedAt(error, path)}`);
}

// A path relative to the working directory, a `file:` URL (as `import.meta.url` gives), or `~/…`, which the
// shell leaves alone in `--actions=~/actions.js`.
function modulePathOf(spec: string): string {
  if (/^file:/i.test(spec)) {
    try {
      return fileURLToPath(spec);
    } catch (error) {
      throw new UsageError(`actions module ${spec} is not a usable file: URL (${(error as Error).message})`);
    }
  }
  return resolve(startsAtHome(spec) ? join(homedir(), spec.slice(1)) : spec);
}

// The runner finds an operation's action by name: two actions under one name would drive each other's records.
function checkNames(actions: Map<AnyAction, string>, modulePath: string): void {
  const byName = new Map<string, string>();
  for (const [action, where] of actions) {
    const first = byName.get(action.name);
    if (first !== undefined) {
      throw new UsageError(
        `actions module ${modulePath} exports two different actions named "${action.name}" (${first} and ${where}); give each its own name`,
      );
    }
    byName.set(action.name, where);
  }
}

/**
 * One progress line: rounds, claims and the completions reached so far. `final` (the closing summary)
 * always names the leases lost, so a clean run says 0; progress lines name them only once one is lost.
 */
export function progressLine(report: ReconcileReport, final = false): string {
  const s = report.byStatus;
  const parts = [
    `${report.rounds} round${report.rounds === 1 ? '' : 's'}`,
    `${report.claimed} claimed`,
    `verified ${s.verified}`,
    `failed ${s.failed}`,
    `unknown ${s.unknown}`,
    `pending ${s.pending}`,
  ];
  if (s.partial > 0) parts.push(`partial ${s.partial}`);
  if (s.no_op > 0) parts.push(`no_op ${s.no_op}`);
  if (report.unknownAction > 0) parts.push(`unknown action ${report.unknownAction}`);
  if (report.errors > 0) parts.push(`errors ${report.errors}`);
  const lost = report.leasesLost ?? 0;
  if (final || lost > 0) parts.push(`leases lost ${lost}`);
  // A count alone ("errors 7") says nothing to fix while the loop runs; the summary puts the reason on stderr.
  if (!final && report.lastError !== undefined) parts.push(`last error: ${clipped(report.lastError)}`);
  return `reconcile: ${parts.join(' · ')}`;
}

// One line: a driver's message can be long, and the progress line is rewritten in place on a terminal.
function clipped(text: string, max = 160): string {
  const chars = [...printable(text)];
  return chars.length <= max ? chars.join('') : `${chars.slice(0, max - 1).join('')}…`;
}

/** Runs `readback reconcile`; `onStop` replaces the SIGINT/SIGTERM listeners (tests use it). */
export async function runReconcile(
  { flags }: ParsedArgs,
  io: CliIO,
  onStop: StopHook = processSignals,
): Promise<number> {
  const storeSpec = stringFlag(flags, 'store') ?? DEFAULT_STORE;
  const modulePath = stringFlag(flags, 'actions');
  if (modulePath === undefined && !isDemoStore(storeSpec)) {
    throw new UsageError("'readback reconcile' needs --actions <module>");
  }
  const concurrency = intFlag(flags, 'concurrency');
  const leaseMs = msFlag(flags, 'lease-ms', MIN_LEASE_MS);
  const once = flags.once === true;
  const json = flags.json === true;
  const pgOptions = postgresFlags(flags, storeSpec);

  // Without --actions on the demo's own store, the built-in demo actions settle what the demo left pending.
  let actions: AnyAction[];
  if (modulePath === undefined) {
    actions = demoActions(storeSpec);
  } else {
    const located = await loadModule(modulePath);
    checkNames(located, modulePath);
    actions = [...located.keys()];
  }
  const store = await openStore(storeSpec, pgOptions ? { postgres: pgOptions } : {});
  const controller = new AbortController();
  const removeStop = onStop(() => controller.abort());
  const tty = io.stdout.isTTY === true;
  let progressShown = false;
  try {
    let runner: ReturnType<typeof createRunner>;
    try {
      runner = createRunner({ store, actions });
    } catch (error) {
      throw new CommandError(
        `actions module ${modulePath ?? '(demo)'}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (!json && !once) {
      io.stdout.write(
        `reconciling ${storeSpec} with ${actions.length} action${actions.length === 1 ? '' : 's'} (Ctrl-C stops after in-flight work)\n`,
      );
    }
    const report: ReconcileReport = await runner.reconcile({
      once,
      signal: controller.signal,
      ...(concurrency !== undefined ? { concurrency } : {}),
      ...(leaseMs !== undefined ? { leaseMs } : {}),
      ...(json
        ? {}
        : {
            onProgress: (r: ReconcileReport) => {
              progressShown = true;
              // On a terminal one line is rewritten in place; logs get one line per round.
              io.stdout.write(tty ? `\r\u001b[K${progressLine(r)}` : `${progressLine(r)}\n`);
            },
          }),
    });
    // The loop ends on its own only on an error no retry can change (a store that stays read-only).
    const gaveUp = !once && !controller.signal.aborted;
    if (json) {
      // leasesLost is in the report only once one is lost; the JSON summary always carries it. One line, so a
      // log collector reading a long-running reconciler's stdout keeps the report as one record.
      io.stdout.write(`${JSON.stringify({ ...report, leasesLost: report.leasesLost ?? 0 })}\n`);
    } else {
      if (tty && progressShown) io.stdout.write('\n');
      const why = controller.signal.aborted ? 'stopped' : gaveUp ? 'gave up' : 'done';
      io.stdout.write(`${why}: ${progressLine(report, true).replace(/^reconcile: /, '')}\n`);
      // The error's text comes from a verifier or a store: one line, control characters escaped.
      if (report.lastError)
        io.stderr.write(`readback: last error while reconciling: ${printable(report.lastError)}\n`);
    }
    // A single pass is what a cron job runs: a store or action failure must reach its exit status. An
    // operation left unknown (its budget ran out) is an honest outcome, not an error. The loop retries its
    // errors itself, so stopping it is a clean shutdown (exit 0) whatever its summary counts; a loop that gave
    // up on a permanent error failed, and a supervisor must see that.
    return (once && report.errors > 0) || gaveUp ? 1 : 0;
  } finally {
    removeStop();
    await store.close();
  }
}

/** `readback reconcile`: drives due and crash-interrupted operations to an honest end state. */
export const reconcileCommand: Command = {
  summary: 'claim due operations in a store and drive them to an honest end state',
  usage:
    'readback reconcile [--actions <module>] [--store S] [--once] [--concurrency N] [--lease-ms N] [--json]\n' +
    '                          [--lease-clock database|caller] [--reconnect-retries N] [--reconnect-base-ms N]\n' +
    '                          [--reconnect-max-ms N]\n' +
    '\n' +
    'Exit code: with --once, 0 when the pass is done and 1 when it counted errors (a store or action failure;\n' +
    'an operation left unknown is an outcome, not an error). Without --once it runs until SIGINT/SIGTERM and\n' +
    'then exits 0: it retries its errors, and its summary counts them, unless one cannot pass (a store that\n' +
    'stays read-only): then it stops and exits 1. A second signal exits at once (130 for SIGINT, 143 for\n' +
    'SIGTERM); what it was reading stays leased until --lease-ms passes. 2 on a usage mistake.',
  flags: {
    store: {
      type: 'string',
      description: `SQLite database file or postgres:// URL (?schema=name) (default ${DEFAULT_STORE})`,
    },
    actions: {
      type: 'string',
      description:
        'path or file: URL of a JavaScript module exporting the actions (defineAction results, or arrays/objects of them), each under its own name; defaults to the demo actions for the demo store',
    },
    once: {
      type: 'boolean',
      description: 'one pass over what is due now, then exit (exit 1 if the pass counted errors)',
    },
    concurrency: { type: 'string', description: 'operations driven in parallel per round (default 8)' },
    'lease-ms': {
      type: 'string',
      description: `lease length in ms, renewed every third of it while an operation is worked (default 60000; ${MIN_LEASE_MS} to ${MAX_TIMER_MS})`,
    },
    json: { type: 'boolean', description: 'print only the final report, as one line of JSON' },
    'lease-clock': {
      type: 'string',
      description:
        "postgres:// only: whose clock runs leases, 'database' (default: the server's, safe across skewed hosts) or 'caller' (this process's)",
    },
    'reconnect-retries': {
      type: 'string',
      description:
        'postgres:// only: retries of a statement after a lost connection (default 10; 0 turns retrying off)',
    },
    'reconnect-base-ms': {
      type: 'string',
      description: `postgres:// only: first backoff step in ms, doubled per retry with full jitter (default 100; at most ${MAX_TIMER_MS})`,
    },
    'reconnect-max-ms': {
      type: 'string',
      description: `postgres:// only: largest backoff step in ms (default 5000; at most ${MAX_TIMER_MS})`,
    },
  },
  run: (args, io) => runReconcile(args, io),
};
