import { randomBytes } from 'node:crypto';
import { renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { readIncident } from '../review/adapters.js';
import { type ReviewResult, review } from '../review/analyze.js';
import { buildFixture } from '../review/fixture.js';
import { describeIssue } from '../review/issues.js';
import { describeLocation, type Incident } from '../review/model.js';
import { runsOf, selectRun } from '../review/readback-trace.js';
import { redactIncident } from '../review/redact.js';
import { renderReview, reviewJson } from '../review/report.js';
import { incidentFromStore } from '../review/store-adapter.js';
import type { CliIO, Command, ParsedArgs } from './args.js';
import { UsageError } from './args.js';
import { CommandError, printable, printableDeep, printableJson, readUtf8, stringFlag } from './format.js';
import { openStore, redact } from './store.js';

/** The exit code when the review found an unsupported transition (0 is clean; 1 and 2 are errors). */
export const UNSUPPORTED_EXIT_CODE = 3;

function answerOf(flags: ParsedArgs['flags']): string | undefined {
  const text = stringFlag(flags, 'answer');
  const file = stringFlag(flags, 'answer-file');
  if (text !== undefined && file !== undefined)
    throw new UsageError("give either '--answer' or '--answer-file', not both");
  return file !== undefined ? readUtf8(file, 'answer file') : text;
}

async function fromStore(spec: string, flags: ParsedArgs['flags']): Promise<Incident> {
  const runId = stringFlag(flags, 'run');
  if (runId === undefined || runId.trim() === '')
    throw new UsageError("'--store' needs '--run ID': the run to review");
  const request = stringFlag(flags, 'request');
  const answer = answerOf(flags);
  const store = await openStore(spec);
  try {
    let incident: Incident | null;
    try {
      incident = await incidentFromStore(store, {
        runId,
        source: `store ${redact(spec)}`,
        ...(request !== undefined ? { request } : {}),
        ...(answer !== undefined ? { answer } : {}),
      });
    } catch (error) {
      // The store failing under the review (a damaged file, a lost connection) is the user's to fix, as for
      // `ops`: name the store and the reason, not readback's stack.
      const reason = error instanceof Error ? error.message : String(error);
      throw new CommandError(`store ${redact(spec)} failed during 'readback review': ${printable(reason)}`);
    }
    if (incident === null)
      throw new CommandError(`store ${redact(spec)} has no operations for run '${printable(runId)}'`);
    return incident;
  } finally {
    await store.close();
  }
}

function fromFile(path: string, flags: ParsedArgs['flags']): Incident {
  const runId = stringFlag(flags, 'run');
  // '-' is stdin by convention; reading it as a file named '-' would say "trace not found: -".
  if (path === '-')
    throw new UsageError("review reads a trace file, not stdin ('-'): save the trace to a file and name it");
  const read = readIncident(readUtf8(path, 'trace', { tornTail: true }), path);
  if (!read.ok) {
    const shown = read.issues.slice(0, 20).map((i) => `  ${printable(describeIssue(i))}`);
    const more = read.issues.length > 20 ? [`  … and ${read.issues.length - 20} more`] : [];
    throw new CommandError(
      `${printable(path)} is not a valid review trace:\n${[...shown, ...more].join('\n')}`,
    );
  }
  return supplement(oneRun(read.value, runId), flags);
}

// A review is of one agent run; a readback trace from a shared sink holds many, and judging one run's
// answer against another run's calls would point the incident at the wrong call.
function oneRun(incident: Incident, runId: string | undefined): Incident {
  if (incident.format !== 'trace') {
    if (runId !== undefined)
      throw new UsageError("option '--run' only applies with '--store' or a readback trace");
    return incident;
  }
  const runs = runsOf(incident).map(printable);
  const listed = `${runs.slice(0, 10).join(', ')}${runs.length > 10 ? `, … (${runs.length - 10} more)` : ''}`;
  const source = printable(incident.source);
  if (runId === undefined) {
    if (runs.length > 1)
      throw new UsageError(`${source} holds ${runs.length} runs (${listed}); pick one with '--run ID'`);
    return incident;
  }
  const run = selectRun(incident, runId);
  if (run === undefined)
    throw new CommandError(
      `${source} has no events of run '${printable(runId)}' (it holds ${listed || 'no runs'})`,
    );
  return run;
}

// Inputs without a request or an answer (readback's own trace) take them from the flags; an input that
// has its own keeps it, since two versions of what the user asked would make the review guesswork.
function supplement(incident: Incident, flags: ParsedArgs['flags']): Incident {
  const request = stringFlag(flags, 'request');
  const answer = answerOf(flags);
  // A loop, not Math.max(...spread): a trace of a few hundred thousand calls would overflow the stack.
  let end = 0;
  for (const c of incident.calls) {
    end = Math.max(end, c.at.order, c.result?.at.order ?? 0, c.readback?.at.order ?? 0);
  }
  if (request !== undefined) {
    if (incident.request)
      throw new UsageError(
        `option '--request': the input already has a request (${printable(describeLocation(incident.request.at))})`,
      );
    incident.request = { text: request, at: { order: 0, part: '--request' } };
  }
  if (answer !== undefined) {
    const flag = flags.answer !== undefined ? '--answer' : '--answer-file';
    if (incident.answer)
      throw new UsageError(
        `option '${flag}': the input already has a final answer (${printable(describeLocation(incident.answer.at))})`,
      );
    incident.answer = { text: answer, at: { order: end + 1, part: `the final answer (${flag})` } };
  }
  return incident;
}

// The fixture written over an input would destroy what was reviewed: the trace, or the whole store.
function refuseToOverwrite(out: string, inputs: [string | undefined, string][]): void {
  for (const [input, what] of inputs) {
    if (input !== undefined && sameFile(out, input)) {
      throw new UsageError(
        `option '--fixture-out': ${out} is the ${what}; write the fixture to another file`,
      );
    }
  }
}

// Same device and inode: catches another spelling of the path, and links, not only equal strings.
function sameFile(a: string, b: string): boolean {
  try {
    const x = statSync(a);
    const y = statSync(b);
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    return false;
  }
}

// A fixture is committed and loaded by tests, so it is whole or absent: written beside its destination and
// renamed over it (an existing file is replaced in one step), never truncated by a full disk or a kill.
function writeFixture(out: string, text: string): void {
  const temp = join(dirname(out), `.${basename(out)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    writeFileSync(temp, text, { flag: 'wx' });
    renameSync(temp, out);
  } catch (error) {
    rmSync(temp, { force: true });
    const code = (error as { code?: unknown }).code;
    // The temporary file's name in the system's message would only confuse: say what is wrong with `out`.
    const reason =
      code === 'ENOENT' || code === 'ENOTDIR'
        ? `directory ${dirname(out)} does not exist`
        : code === 'EISDIR'
          ? 'it is a directory'
          : code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
            ? `no permission to write in ${dirname(out)}`
            : (error as Error).message;
    throw new CommandError(`could not write fixture ${out}: ${reason}`);
  }
}

async function runReview(args: ParsedArgs, io: CliIO): Promise<number> {
  const { flags, positionals } = args;
  const spec = stringFlag(flags, 'store');
  const path = positionals[0];
  if ((spec === undefined) === (path === undefined)) {
    throw new UsageError("review needs either a trace file or '--store S --run ID'");
  }
  const fixtureOut = stringFlag(flags, 'fixture-out');
  if (fixtureOut !== undefined) {
    refuseToOverwrite(fixtureOut, [
      [path, 'trace under review'],
      [spec !== undefined && !/^postgres(ql)?:\/\//i.test(spec) ? spec : undefined, 'store under review'],
      [stringFlag(flags, 'answer-file'), 'answer file'],
    ]);
  }
  const incident = redactIncident(spec !== undefined ? await fromStore(spec, flags) : fromFile(path!, flags));
  const result: ReviewResult = review(incident);
  if (fixtureOut !== undefined) {
    writeFixture(fixtureOut, `${JSON.stringify(buildFixture(incident, result), null, 2)}\n`);
  }
  // Trace text is untrusted: a terminal would obey escape sequences in an answer or a tool name, and a line
  // break in one would forge a line of the report. The JSON keeps every character, escaping the risky ones.
  io.stdout.write(
    flags.json === true ? printableJson(reviewJson(result)) : renderReview(printableDeep(result)),
  );
  if (fixtureOut !== undefined && flags.json !== true)
    io.stdout.write(`fixture      written to ${printable(fixtureOut)}\n`);
  return result.first === undefined ? 0 : UNSUPPORTED_EXIT_CODE;
}

/** `readback review`: the fifteen-minute incident review of one agent run. */
export const reviewCommand: Command = {
  summary: 'find the first claim in an agent run that outran its evidence, classify it, name the repair',
  usage: [
    'readback review <trace.jsonl | fixture.json> [--run ID] [--request TEXT] [--answer TEXT | --answer-file F] [--json] [--fixture-out F]',
    '       readback review --store S --run ID [--request TEXT] [--answer TEXT | --answer-file F] [--json] [--fixture-out F]',
    '',
    'The trace format is documented in docs/review-trace-format.md.',
    `Exit code: 0 when every claim is backed by its evidence, ${UNSUPPORTED_EXIT_CODE} when an unsupported`,
    'transition was found, 1 on an error (unreadable trace, store), 2 on a usage mistake.',
  ].join('\n'),
  positionals: { max: 1 },
  flags: {
    store: { type: 'string', description: 'review a run from this store: SQLite file or postgres:// URL' },
    run: {
      type: 'string',
      description: 'the run to review: with --store, or in a readback trace that holds several runs',
    },
    request: {
      type: 'string',
      description: 'what the user asked, for a store or readback trace (which do not keep it)',
    },
    answer: { type: 'string', description: "the agent's final answer, for a store or readback trace" },
    'answer-file': { type: 'string', description: 'read the final answer from this file' },
    json: { type: 'boolean', description: 'print the review as JSON' },
    'fixture-out': {
      type: 'string',
      description: 'write a regression fixture (JSON) for the first finding to this file',
    },
  },
  run: (args, io) => runReview(args, io),
};
