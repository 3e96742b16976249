import { parseArgs } from 'node:util';

/** A stream-like sink: `process.stdout` fits, and so does a test's string collector. */
export interface Writer {
  write(chunk: string): unknown;
  /** True when the sink is a terminal; enables color and terminal-width layout. */
  isTTY?: boolean;
  /** Terminal width in columns, when known. */
  columns?: number;
}

/** Where a command writes, and the environment it may consult (NO_COLOR). */
export interface CliIO {
  stdout: Writer;
  stderr: Writer;
  env?: Record<string, string | undefined>;
  /**
   * Told what a command made durable before printing (`ops resolve`'s decision), so that an output that cannot
   * be written (a full disk) is reported with it: the user must not think nothing happened.
   */
  done?(what: string): void;
}

/** One option a command accepts; booleans take no value, strings need one. */
export interface FlagSpec {
  type: 'boolean' | 'string';
  short?: string;
  description: string;
}

/** A command's options, by long name (without the dashes). */
export type FlagSpecs = Record<string, FlagSpec>;

/** Parsed options and positionals of one command. */
export interface ParsedArgs {
  flags: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** One CLI command: its help text, its options and what it runs; the exit code is its result. */
export interface Command {
  summary: string;
  usage: string;
  flags: FlagSpecs;
  /** Most commands take no positional arguments; those that do say so, so stray words are caught. */
  positionals?: { max: number };
  run(args: ParsedArgs, io: CliIO): Promise<number>;
}

/** A mistake in how the CLI was called: reported in one line with a usage hint, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * Parses a command's arguments against its specs. parseArgs runs non-strict so that every
 * problem can be reported in our own words, naming the offending option, instead of Node's
 * longer message.
 */
export function parseFlags(argv: readonly string[], specs: FlagSpecs, context: string): ParsedArgs {
  const options: Record<string, { type: 'boolean' | 'string'; short?: string }> = {};
  for (const [name, spec] of Object.entries(specs)) {
    options[name] = spec.short ? { type: spec.type, short: spec.short } : { type: spec.type };
  }
  const { tokens } = parseArgs({
    args: [...argv],
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const flags: ParsedArgs['flags'] = {};
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'positional') positionals.push(token.value);
    if (token.kind !== 'option') continue;
    const spec = Object.hasOwn(specs, token.name) ? specs[token.name] : undefined;
    if (!spec) {
      const near = token.rawName.startsWith('--') ? nearest(token.name, Object.keys(specs)) : undefined;
      throw new UsageError(
        `unknown option '${token.rawName}' for '${context}'${near === undefined ? '' : `; did you mean '--${near}'?`}`,
      );
    }
    if (spec.type === 'boolean') {
      if (token.value !== undefined) throw new UsageError(`option '${token.rawName}' takes no value`);
      flags[token.name] = true;
    } else {
      if (token.value === undefined) throw new UsageError(`option '${token.rawName}' needs a value`);
      // `--store --json` would take '--json' for the path (and drop the flag): as Node's strict mode does,
      // a separate value that looks like an option is a forgotten value; `--store=-x` still passes one.
      if (token.inlineValue === false && looksLikeOption(token.value)) {
        throw new UsageError(
          `option '${token.rawName}' needs a value; got the option '${token.value}' (write ${token.rawName}=${token.value} if that is the value)`,
        );
      }
      // Last-one-wins would silently drop a value (a second --note, a second --store): make the user pick.
      if (flags[token.name] !== undefined)
        throw new UsageError(`option '--${token.name}' is given more than once`);
      flags[token.name] = token.value;
    }
  }
  return { flags, positionals };
}

// The option a typo most likely meant (`--jsn`, `--stor`, `--dry-rn`): at most two edits away, and fewer than
// half the name, so an unrelated word is not dressed up as a suggestion.
function nearest(name: string, names: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const candidate of names) {
    const distance = editDistance(name, candidate);
    if (
      distance <= 2 &&
      distance * 2 < candidate.length &&
      (best === undefined || distance < best.distance)
    ) {
      best = { name: candidate, distance };
    }
  }
  return best?.name;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}

// A dash and a letter, or two dashes: '-' alone (stdin by convention) and '-5' are values.
function looksLikeOption(value: string): boolean {
  return /^-[^\d.]/.test(value);
}

/** The option list of a command's help, one aligned line per option. */
export function describeFlags(specs: FlagSpecs): string[] {
  const rows = Object.entries(specs).map(([name, spec]) => {
    const short = spec.short ? `-${spec.short}, ` : '    ';
    const value = spec.type === 'string' ? ` <${name}>` : '';
    return [`${short}--${name}${value}`, spec.description] as const;
  });
  const width = Math.max(0, ...rows.map(([left]) => left.length));
  return rows.map(([left, text]) => `  ${left.padEnd(width)}  ${text}`);
}
