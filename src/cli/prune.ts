import { pruneSettled } from '../store/prune.js';
import { DEFAULT_PRUNE_LIMIT, MAX_PRUNE_LIMIT, type OperationStore } from '../store/types.js';
import { type CliIO, type ParsedArgs, UsageError } from './args.js';
import { CommandError, isoTime, stringFlag } from './format.js';

type Flags = ParsedArgs['flags'];

const UNIT_MS: Record<string, number> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

// The widest span a Date can hold on either side of 1970; a cutoff past it has no ISO form to print.
const MAX_DATE_MS = 8.64e15;

const DURATION_HINT = 'a whole number above zero with a unit ms, s, m, h, d or w, such as 30d, 12h or 500ms';

/** A duration flag (`30d`, `12h`, `90m`, `45s`, `500ms`, `2w`) in ms; anything else is a usage error. */
export function durationFlag(flags: Flags, name: string): number | undefined {
  const raw = stringFlag(flags, name);
  if (raw === undefined) return undefined;
  const [, digits = '', unit = ''] = /^(\d+)(ms|s|m|h|d|w)$/.exec(raw.trim()) ?? [];
  const ms = Number(digits) * (UNIT_MS[unit] ?? Number.NaN);
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new UsageError(`option '--${name}' needs ${DURATION_HINT}; got '${raw}'`);
  }
  return ms;
}

/** The checked options of `readback ops prune`: the cutoff `--older-than` sets at `now`; the batch size. */
export function pruneArgs(flags: Flags, now: number): { settledBefore: number; limit: number } {
  // Deleting records must be asked for in so many words: no default age.
  const olderThan = durationFlag(flags, 'older-than');
  if (olderThan === undefined) {
    throw new UsageError(
      `'readback ops prune' needs --older-than <duration> (${DURATION_HINT}): deleting records must be explicit`,
    );
  }
  const settledBefore = now - olderThan;
  if (settledBefore < -MAX_DATE_MS) {
    throw new UsageError(
      `option '--older-than' reaches back further than a date can; got '${stringFlag(flags, 'older-than')}'`,
    );
  }
  // One message for every bad value, with the range: a store refuses a batch above MAX_PRUNE_LIMIT.
  const raw = stringFlag(flags, 'limit');
  const limit = raw === undefined ? DEFAULT_PRUNE_LIMIT : /^\d+$/.test(raw.trim()) ? Number(raw) : Number.NaN;
  if (!(limit >= 1 && limit <= MAX_PRUNE_LIMIT)) {
    throw new UsageError(
      `option '--limit' needs a whole number from 1 to ${MAX_PRUNE_LIMIT} for prune; got '${raw}'`,
    );
  }
  return { settledBefore, limit };
}

/** `readback ops prune`: deletes settled operations older than the cutoff, with their events, in batches. */
export async function pruneOps(
  store: OperationStore,
  _id: string | undefined,
  flags: Flags,
  io: CliIO,
): Promise<number> {
  // One cutoff for every batch: operations that settle while the command runs are newer than it, so the loop
  // ends even on a busy store.
  const { settledBefore, limit } = pruneArgs(flags, Date.now());
  if (typeof store.prune !== 'function') {
    throw new CommandError(
      'this store cannot prune: it has no prune method (a custom or older OperationStore); nothing was deleted',
    );
  }
  let pruned = 0;
  // Many short writes with pauses between them rather than one long one (see pruneSettled): runs and
  // reconcilers writing to the same store are not stalled behind a retention sweep.
  try {
    const onBatch = (_: number, total: number) => {
      pruned = total;
    };
    await pruneSettled(store, { settledBefore, limit, onBatch });
  } catch (error) {
    if (pruned === 0) throw error;
    // Earlier batches are committed: say so, so the operator knows the store changed and a rerun continues.
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`${reason} (after pruning ${pruned}; run the command again to prune the rest)`);
  }
  if (flags.json) {
    const report = { pruned, settledBefore: isoTime(settledBefore), settledBeforeMs: settledBefore };
    io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return 0;
  }
  const what = `settled operation${pruned === 1 ? '' : 's'}`;
  io.stdout.write(
    `pruned ${pruned} ${what} last changed before ${isoTime(settledBefore)} (and their events)\n`,
  );
  return 0;
}
