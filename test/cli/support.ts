import type { CliIO } from '../../src/cli/args.js';
import { main } from '../../src/cli/main.js';

/** Runs the CLI in-process with string sinks; `tty` makes stdout look like a terminal of that width. */
export async function runCli(argv: string[], options: { tty?: number; env?: Record<string, string> } = {}) {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: {
      write: (chunk: string) => {
        stdout += chunk;
      },
      ...(options.tty ? { isTTY: true, columns: options.tty } : {}),
    },
    stderr: {
      write: (chunk: string) => {
        stderr += chunk;
      },
    },
    env: options.env ?? {},
  };
  const code = await main(argv, io);
  return { code, stdout, stderr };
}

/** Removes ANSI escape sequences, to measure and match what a terminal shows. */
export function stripAnsi(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching the escape character is the point.
  return text.replace(/\u001b\[[0-9;]*m/g, '');
}

/** The widest line of the text as a terminal shows it, in code points. */
export function widest(text: string): number {
  return Math.max(
    ...stripAnsi(text)
      .split('\n')
      .map((line) => [...line].length),
  );
}

/** The argv of `readback ops resolve <id> --store <store> --status <status> --note <note> --by <by>`. */
export function resolveArgv(id: string, store: string, status = 'failed', note = 'n', by = 'm'): string[] {
  return ['ops', 'resolve', id, '--store', store, '--status', status, '--note', note, '--by', by];
}
