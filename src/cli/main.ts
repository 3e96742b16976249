#!/usr/bin/env node
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type CliIO, type Command, describeFlags, type FlagSpecs, parseFlags, UsageError } from './args.js';
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

const HELP_FLAG: FlagSpecs = { help: { type: 'boolean', short: 'h', description: 'show this help' } };

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
  const [first, ...rest] = argv;
  if (first === undefined) throw new UsageError('missing command');
  if (first === '--help' || first === '-h') return print(io, generalHelp());
  if (first === '--version' || first === '-V') return print(io, `${version()}\n`);
  if (first.startsWith('-')) throw new UsageError(`unknown option '${first}'`);
  if (first === 'help') {
    const [topic, ...extra] = rest;
    if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}' for 'readback help'`);
    return print(io, topic === undefined ? generalHelp() : commandHelp(lookup(topic)));
  }
  const command = lookup(first);
  const args = parseFlags(rest, { ...command.flags, ...HELP_FLAG }, `readback ${first}`);
  if (args.flags.help) return print(io, commandHelp(command));
  const stray = args.positionals[command.positionals?.max ?? 0];
  if (stray !== undefined) throw new UsageError(`unexpected argument '${stray}' for 'readback ${first}'`);
  return command.run(args, io);
}

function print(io: CliIO, text: string): number {
  io.stdout.write(text);
  return 0;
}

/**
 * Runs the CLI in-process and resolves to its exit code: 0 on success, 2 for a usage mistake,
 * 1 for an unexpected error; the bin below is the only caller that touches `process`.
 */
export async function main(argv: readonly string[], io: CliIO): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(
        `readback: ${error.message}\nusage: readback <command> [options] (see 'readback --help')\n`,
      );
      return 2;
    }
    if (error instanceof CommandError) {
      io.stderr.write(`readback: ${error.message}\n`);
      return 1;
    }
    io.stderr.write(
      `readback: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return 1;
  }
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

if (isEntry()) {
  // `readback demo | head` closes the pipe early; that is the reader's choice, not an error.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });
  main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env }).then(
    (code) => {
      process.exitCode = code;
    },
  );
}
