#!/usr/bin/env node
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  type CliIO,
  type Command,
  describeFlags,
  type FlagSpecs,
  parseFlags,
  UsageError,
  type Writer,
} from './args.js';
import { auditCommand } from './audit.js';
import { demoCommand } from './demo.js';
import { CommandError } from './format.js';
import { opsCommand } from './ops.js';
import { reconcileCommand } from './reconcile.js';
import { reviewCommand } from './review.js';

/** The commands `readback` knows; later ones (review, audit) register here. */
export const COMMANDS: Record<string, Command> = {
  audit: auditCommand,
  demo: demoCommand,
  ops: opsCommand,
  reconcile: reconcileCommand,
  review: reviewCommand,
};

const HELP_FLAG: FlagSpecs = {
  help: { type: 'boolean', short: 'h', description: 'show this help (with --json: as { "help": text })' },
};

function version(): string {
  // Same relative path from src/cli and dist/cli, so tests and the built bin read one file.
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

function generalHelp(): string {
  const names = Object.keys(COMMANDS);
  const width = Math.max('help'.length, ...names.map((n) => n.length));
  return [
    'readback: make AI agents honest about what their tools did.',
    '',
    'usage: readback <command> [options]',
    '',
    'commands:',
    ...names.map((n) => `  ${n.padEnd(width)}  ${COMMANDS[n]!.summary}`),
    `  ${'help'.padEnd(width)}  show help for readback or for one command`,
    '',
    'options:',
    '  -h, --help     show this help',
    '  -V, --version  print the version',
    '',
    'With --json, --help and --version print a JSON document ({ "help": text } or { "version": v }).',
    '',
  ].join('\n');
}

function commandHelp(command: Command): string {
  return [
    `${command.summary}.`,
    '',
    `usage: ${command.usage}`,
    '',
    'options:',
    ...describeFlags({ ...command.flags, ...HELP_FLAG }),
    '',
  ].join('\n');
}

function lookup(name: string): Command {
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) throw new UsageError(`unknown command '${name}'`);
  return command;
}

async function dispatch(argv: readonly string[], io: CliIO): Promise<number> {
  const json = wantsJson(argv);
  const [first, ...rest] = argv;
  if (first === undefined) throw new UsageError('missing command');
  if (first === '--help' || first === '-h') return print(io, generalHelp(), json);
  if (first === '--version' || first === '-V') {
    return json ? print(io, '', json, { version: version() }) : print(io, `${version()}\n`);
  }
  if (first.startsWith('-')) throw new UsageError(`unknown option '${first}'`);
  if (first === 'help') {
    const [topic, ...extra] = json ? rest.filter((arg) => arg !== '--json') : rest;
    if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}' for 'readback help'`);
    // `readback help help` is a fair question; the general help answers it.
    const text = topic === undefined || topic === 'help' ? generalHelp() : commandHelp(lookup(topic));
    return print(io, text, json);
  }
  const command = lookup(first);
  const args = parseFlags(rest, { ...command.flags, ...HELP_FLAG }, `readback ${first}`);
  if (args.flags.help) return print(io, commandHelp(command), json);
  const stray = args.positionals[command.positionals?.max ?? 0];
  if (stray !== undefined) throw new UsageError(`unexpected argument '${stray}' for 'readback ${first}'`);
  return command.run(args, io);
}

// Under --json stdout is one JSON document whatever was asked, so help and the version come as one too.
function print(io: CliIO, text: string, json = false, doc: object = { help: text }): number {
  io.stdout.write(json ? `${JSON.stringify(doc, null, 2)}\n` : text);
  return 0;
}

/** What a failed command prints on stdout under `--json`, so a machine reading stdout always gets one document. */
export interface JsonFailure {
  error: {
    /** `usage`: how the CLI was called (exit 2); `failed`: what was asked could not be done; `internal`: a bug. */
    kind: 'usage' | 'failed' | 'internal';
    /** The first line of the message stderr shows. */
    message: string;
    /** Its further lines (every problem of an invalid trace or contract), when there are some. */
    details?: string[];
    exitCode: number;
  };
}

// `--json` anywhere before a `--`: a caller who asked for JSON gets it even when the error is that the
// command line itself is wrong (an unknown option, a missing value), found before any flag is parsed.
function wantsJson(argv: readonly string[]): boolean {
  for (const arg of argv) {
    if (arg === '--') return false;
    if (arg === '--json') return true;
  }
  return false;
}

function failureOf(error: unknown): { kind: JsonFailure['error']['kind']; code: number; text: string } {
  if (error instanceof UsageError) return { kind: 'usage', code: 2, text: error.message };
  if (error instanceof CommandError) return { kind: 'failed', code: 1, text: error.message };
  return {
    kind: 'internal',
    code: 1,
    text: `unexpected error: ${error instanceof Error ? error.message : String(error)}`,
  };
}

/** The `--json` error document for a failure message, one line per detail. */
export function jsonFailure(kind: JsonFailure['error']['kind'], text: string, exitCode: number): JsonFailure {
  const [message = '', ...rest] = text.split('\n');
  const details = rest.map((line) => line.trim()).filter((line) => line !== '');
  return { error: { kind, message, ...(details.length > 0 ? { details } : {}), exitCode } };
}

/**
 * Runs the CLI in-process and resolves to its exit code: 0 on success, 2 for a usage mistake,
 * 1 for an error (commands document their own finding codes); the bin below is the only caller that touches
 * `process`. Errors go to stderr as text; with `--json` stdout also gets them as one `JsonFailure` document.
 */
export async function main(argv: readonly string[], io: CliIO): Promise<number> {
  const json = wantsJson(argv);
  let wrote = false;
  let done: string | undefined;
  const stdout: Writer = {
    write: (chunk: string) => {
      wrote = true;
      try {
        return io.stdout.write(chunk);
      } catch (error) {
        // A sink that throws (a full disk written synchronously): one line, not a bug report with a stack.
        throw new CommandError(outputFailure(error, done));
      }
    },
  };
  if (io.stdout.isTTY !== undefined) stdout.isTTY = io.stdout.isTTY;
  if (io.stdout.columns !== undefined) stdout.columns = io.stdout.columns;
  const noteDone = (what: string) => {
    done = what;
    io.done?.(what);
  };
  try {
    return await dispatch(argv, { ...io, stdout, done: noteDone });
  } catch (error) {
    const failure = failureOf(error);
    if (failure.kind === 'usage') {
      io.stderr.write(
        `readback: ${failure.text}\nusage: readback <command> [options] (see 'readback --help')\n`,
      );
    } else if (failure.kind === 'failed') {
      io.stderr.write(`readback: ${failure.text}\n`);
    } else {
      io.stderr.write(
        `readback: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
    }
    // A command that already printed its document (then failed closing the store) keeps stdout one document.
    if (json && !wrote) {
      io.stdout.write(`${JSON.stringify(jsonFailure(failure.kind, failure.text, failure.code), null, 2)}\n`);
    }
    return failure.code;
  }
}

/** The line for an output that could not be written, saying what was done before it when something was. */
export function outputFailure(error: unknown, done: string | undefined): string {
  const reason = error instanceof Error ? error.message : String(error);
  return `could not write the output (${reason})${done === undefined ? '' : `; ${done}`}`;
}

function isEntry(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    // npm links bins through symlinks; compare real paths so `npx readback` counts as the entry.
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

// Under `--json` stdout is the document alone: an actions module that logs while it loads or runs
// (`console.log('connected')`) would otherwise put its lines in front of it, so everything but the CLI's own
// writes goes to stderr.
function jsonOnlyStdout(argv: readonly string[]): Writer {
  if (!wantsJson(argv)) return process.stdout;
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  const own: Writer = { write: (chunk: string) => write(chunk) };
  if (process.stdout.isTTY) own.isTTY = true;
  if (process.stdout.columns) own.columns = process.stdout.columns;
  return own;
}

if (isEntry()) {
  let done: string | undefined;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    // `readback demo | head` closes the pipe early; that is the reader's choice, not an error.
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    // Anything else (ENOSPC on `> /dev/full`) means the user never saw the output: say so, and what was done.
    process.stderr.write(`readback: ${outputFailure(error, done)}\n`);
    process.exit(1);
  });
  const argv = process.argv.slice(2);
  const io: CliIO = {
    stdout: jsonOnlyStdout(argv),
    stderr: process.stderr,
    env: process.env,
    done: (what) => {
      done = what;
    },
  };
  main(argv, io).then((code) => {
    process.exitCode = code;
  });
}
