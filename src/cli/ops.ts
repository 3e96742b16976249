import { STATUSES, type Status } from '../contract/types.js';
import { ReadbackError } from '../errors.js';
import { decisionTextProblem, hasVisibleText } from '../runner/approval.js';
import { resolveByOperator } from '../runner/operator.js';
import { isShadowRecord } from '../runner/shadow.js';
import {
  DEFAULT_PRUNE_LIMIT,
  MAX_PRUNE_LIMIT,
  type OperationEvent,
  type OperationRecord,
  type OperationStore,
} from '../store/types.js';
import { type CliIO, type Command, type ParsedArgs, UsageError } from './args.js';
import {
  CommandError,
  compactValue,
  intFlag,
  isoTime,
  outputWidth,
  printable,
  shortTime,
  stringFlag,
} from './format.js';
import { pruneArgs, pruneOps } from './prune.js';
import { DEFAULT_STORE, openStore, redact } from './store.js';
import { type Column, renderTable } from './table.js';

type Flags = ParsedArgs['flags'];

interface Subcommand {
  /** Options this subcommand accepts, besides --help. */
  flags: readonly string[];
  /** Whether it takes an operation id. */
  takesId: boolean;
  run(store: OperationStore, id: string | undefined, flags: Flags, io: CliIO): Promise<number>;
}

const LIST_COLUMNS: readonly Column[] = [
  { header: 'id', min: 12, max: 48 },
  { header: 'action', min: 8, max: 24 },
  { header: 'target', min: 8, grow: true },
  { header: 'lifecycle', min: 9, max: 17 },
  // Wide enough for "verified (shadow)".
  { header: 'status', min: 7, max: 17 },
  { header: 'attempt', min: 7, max: 7 },
  { header: 'updated', min: 20, max: 20 },
  { header: 'next poll', min: 20, max: 20 },
];

// `--shadow`: the operations whose live tool claimed something the read-back contradicted.
const SHADOW_COLUMNS: readonly Column[] = [
  { header: 'id', min: 12, max: 48 },
  { header: 'action', min: 8, max: 24 },
  { header: 'claimed', min: 8, max: 8 },
  { header: 'verified status', min: 15, max: 15 },
  { header: 'reason', min: 12, grow: true },
];

/** True when a shadow run recorded that the live tool's claim disagreed with the verified status. */
export function shadowDisagrees(record: OperationRecord): boolean {
  return record.completion?.shadow?.agrees === false;
}

const TIMELINE_COLUMNS: readonly Column[] = [
  { header: 'seq', min: 3, max: 5 },
  { header: 'time', min: 24, max: 24 },
  { header: 'type', min: 8, max: 22 },
  { header: 'from → to', min: 9, max: 30 },
  { header: 'status', min: 7, max: 8 },
  { header: 'actor', min: 6, max: 24 },
  { header: 'detail', min: 12, grow: true },
];

function table(columns: readonly Column[], rows: string[][], width: number, maxLines?: number): string {
  const cells = rows.map((row) => row.map(printable));
  return renderTable(columns, cells, maxLines === undefined ? { width } : { width, maxLines });
}

// Off a terminal nothing limits the width, and ids cut across lines could not be grepped or copied.
function tableWidth(io: CliIO): number {
  return io.stdout.isTTY === true ? outputWidth(io.stdout) : 1_000;
}

function parseStatus(raw: string | undefined): Status | undefined {
  if (raw === undefined) return undefined;
  if (!(STATUSES as readonly string[]).includes(raw)) {
    throw new UsageError(`option '--status' must be one of ${STATUSES.join(', ')}; got '${raw}'`);
  }
  return raw as Status;
}

async function list(
  store: OperationStore,
  _id: string | undefined,
  flags: Flags,
  io: CliIO,
): Promise<number> {
  const status = parseStatus(stringFlag(flags, 'status'));
  const limit = intFlag(flags, 'limit');
  const action = stringFlag(flags, 'action');
  const shadow = flags.shadow === true;
  const listed = await store.list({
    ...(status ? { status } : {}),
    ...(action !== undefined ? { action } : {}),
  });
  const records = shadow ? listed.filter(shadowDisagrees) : listed;
  // Newest activity first, so `--limit 10` shows what just happened.
  records.sort(
    (a, b) => b.updatedAt - a.updatedAt || b.requestedAt - a.requestedAt || a.id.localeCompare(b.id),
  );
  const shown = limit === undefined ? records : records.slice(0, limit);
  if (flags.json) {
    io.stdout.write(`${JSON.stringify(shown, null, 2)}\n`);
    return 0;
  }
  if (shown.length === 0) {
    io.stdout.write(shadow ? 'no shadow disagreements\n' : 'no operations match\n');
    return 0;
  }
  const more = shown.length < records.length ? ` (of ${records.length}; raise --limit to see more)` : '';
  if (shadow) {
    const rows = shown.map((r) => [
      r.id,
      r.action,
      r.completion?.shadow?.claimed ?? '-',
      r.completion?.status ?? '-',
      r.completion?.reason ?? r.completion?.errorCode ?? '-',
    ]);
    io.stdout.write(
      `${table(SHADOW_COLUMNS, rows, tableWidth(io))}\n${shown.length} shadow disagreement${shown.length === 1 ? '' : 's'}${more} (operator signals, not proof)\n`,
    );
    return 0;
  }
  const rows = shown.map((r) => [
    r.id,
    r.action,
    r.target,
    r.lifecycle,
    // A shadow record's status is an operator signal about a live tool, never proof: say so where it is listed.
    isShadowRecord(r) ? `${r.status ?? '-'} (shadow)` : (r.status ?? '-'),
    String(r.attempt),
    shortTime(r.updatedAt),
    shortTime(r.nextPollAt),
  ]);
  io.stdout.write(
    `${table(LIST_COLUMNS, rows, tableWidth(io))}\n${shown.length} operation${shown.length === 1 ? '' : 's'}${more}\n`,
  );
  return 0;
}

async function load(store: OperationStore, id: string): Promise<OperationRecord> {
  const record = await store.get(id);
  if (!record) throw new CommandError(await unknownId(store, id));
  return record;
}

// Ids are matched exactly: a prefix that happens to be unique today could name another operation tomorrow, and
// resolve must never settle a guess. So a prefix is answered with the ids it could mean, to copy, looked for among
// the first PREFIX_SCAN_LIMIT records only: a typo must not load a store of millions of records into memory.
const PREFIX_SCAN_LIMIT = 5_000;
async function unknownId(store: OperationStore, id: string): Promise<string> {
  const scanned = id === '' ? [] : await store.list({ limit: PREFIX_SCAN_LIMIT });
  const near = scanned.map((r) => r.id).filter((other) => other.startsWith(id));
  near.sort();
  if (near.length === 0) return `no operation ${printable(id)}`;
  const shown = near.slice(0, 5).map(printable).join(', ');
  const more = near.length > 5 ? ` and ${near.length - 5} more` : '';
  return `no operation ${printable(id)} (ids are matched in full; ids starting with it: ${shown}${more})`;
}

function fieldLines(fields: [string, string][]): string[] {
  const width = Math.max(...fields.map(([k]) => k.length));
  return fields.map(([k, v]) => `  ${k.padEnd(width)}  ${printable(v)}`);
}

function eventDetail(event: OperationEvent): string {
  if (!event.detail || Object.keys(event.detail).length === 0) return '';
  return compactValue(event.detail, 200);
}

/** The `ops show` text: the record, its latest completion and the event timeline. */
export function renderShow(record: OperationRecord, events: OperationEvent[], width: number): string {
  const out = [
    `operation ${printable(record.id)}`,
    ...fieldLines([
      ['action', record.action],
      ['target', record.target],
      ['lifecycle', record.lifecycle],
      ['status', record.status ?? '-'],
      ['attempt', String(record.attempt)],
      ['run', record.runId],
      ['actor', record.actor ?? '-'],
      ['scope', compactValue(record.scope)],
      ['idempotency key', record.idempotencyKey],
      ['requested', isoTime(record.requestedAt)],
      ['updated', isoTime(record.updatedAt)],
      ['next poll', isoTime(record.nextPollAt)],
      ['reads', String(record.reads)],
      ...(record.providerRef !== null && record.providerRef !== undefined
        ? [['provider ref', compactValue(record.providerRef)] as [string, string]]
        : []),
      ...(record.leaseOwner
        ? [['lease', `${record.leaseOwner} until ${isoTime(record.leaseExpiresAt)}`] as [string, string]]
        : []),
    ]),
    '',
  ];
  const c = record.completion;
  if (c) {
    out.push(
      'completion',
      ...fieldLines([
        ['status', c.status],
        ['errorCode', c.errorCode ?? '-'],
        ['reason', c.reason ?? '-'],
        ['message', c.message],
        ...(c.shadow
          ? [
              [
                'shadow',
                `tool claimed ${c.shadow.claimed}; ${c.shadow.agrees === null ? 'undecided' : c.shadow.agrees ? 'agrees' : 'disagrees'} (an operator signal, never proof)`,
              ] as [string, string],
            ]
          : []),
        ['next', c.nextAllowedAction],
        ['evidence', c.evidence === undefined ? '-' : compactValue(c.evidence, 400)],
        ...c.checks.map(
          (check) =>
            [
              `check ${check.pass ? '✓' : '✗'}`,
              `${check.name}: expected ${compactValue(check.expected, 80)}, observed ${compactValue(check.observed, 80)}`,
            ] as [string, string],
        ),
        ...(c.units
          ? [
              ['units', `${c.units.passed} of ${c.units.required} passed, ${c.units.failed} failed`] as [
                string,
                string,
              ],
            ]
          : []),
      ]),
    );
  } else {
    out.push('completion', '  (none yet)');
  }
  out.push('', `timeline (${events.length} event${events.length === 1 ? '' : 's'})`);
  const rows = events.map((e) => [
    String(e.seq),
    isoTime(e.at),
    e.type,
    `${e.from ?? '∅'} → ${e.to ?? '∅'}`,
    e.status ?? '-',
    e.actor ?? '-',
    eventDetail(e),
  ]);
  out.push(table(TIMELINE_COLUMNS, rows, width, 4));
  return `${out.join('\n')}\n`;
}

async function show(store: OperationStore, id: string | undefined, flags: Flags, io: CliIO): Promise<number> {
  const record = await load(store, id!);
  const events = await store.events(record.id);
  if (flags.json) {
    io.stdout.write(`${JSON.stringify({ record, events }, null, 2)}\n`);
    return 0;
  }
  io.stdout.write(renderShow(record, events, tableWidth(io)));
  return 0;
}

function resolveArgs(flags: Flags): { status: 'verified' | 'failed'; note: string; by: string } {
  const status = stringFlag(flags, 'status');
  if (status === undefined) throw new UsageError("'readback ops resolve' needs --status verified|failed");
  if (status !== 'verified' && status !== 'failed') {
    throw new UsageError(`option '--status' must be verified or failed for resolve; got '${status}'`);
  }
  const note = stringFlag(flags, 'note');
  const by = stringFlag(flags, 'by');
  // The library's rule (resolveByOperator): a zero-width space passes trim() but says nothing.
  const blank = ' (the one given holds only spaces or invisible characters)';
  if (note === undefined || !hasVisibleText(note)) {
    throw new UsageError(
      `'readback ops resolve' needs --note "...": an operator decision must say why${note === undefined ? '' : blank}`,
    );
  }
  if (by === undefined || !hasVisibleText(by)) {
    throw new UsageError(
      `'readback ops resolve' needs --by NAME: an operator decision must say who${by === undefined ? '' : blank}`,
    );
  }
  for (const [flag, text] of [
    ['note', note],
    ['by', by],
  ] as const) {
    const problem = decisionTextProblem(text, flag === 'by');
    if (problem) throw new UsageError(`option '--${flag}' ${problem}`);
  }
  return { status, note, by };
}

async function resolveOp(
  store: OperationStore,
  id: string | undefined,
  flags: Flags,
  io: CliIO,
): Promise<number> {
  const { status, note, by } = resolveArgs(flags);
  const record = await load(store, id!);
  // A reconciler reading it back right now may settle it any moment with evidence; the store's compare-and-set
  // would let only one of the two settle, so refuse rather than race it, and say when to try again.
  if (record.leaseOwner && record.leaseExpiresAt !== null && record.leaseExpiresAt > Date.now()) {
    throw new CommandError(
      `operation ${printable(id!)} is being read back by ${printable(record.leaseOwner)} (lease until ${isoTime(record.leaseExpiresAt)}); ` +
        "wait for it to settle or the lease to expire, then check 'readback ops show'; nothing was changed",
    );
  }
  let completion: Awaited<ReturnType<typeof resolveByOperator>>;
  try {
    completion = await resolveByOperator(store, id!, { status, note, by }, Date.now());
  } catch (error) {
    if (
      error instanceof ReadbackError &&
      (error.code === 'already_settled' || error.code === 'store_conflict')
    ) {
      throw new CommandError(`${error.message}; nothing was changed`);
    }
    if (error instanceof ReadbackError && error.code === 'unknown_operation') {
      throw new CommandError(`no operation ${printable(id!)}`);
    }
    throw error;
  }
  io.done?.(
    `the decision was recorded: ${printable(id!)} is ${completion.status}; see 'readback ops show ${printable(id!)}'`,
  );
  if (flags.json) {
    io.stdout.write(`${JSON.stringify(completion, null, 2)}\n`);
    return 0;
  }
  io.stdout.write(
    [
      `resolved ${printable(id!)} as ${completion.status} (recorded as an operator decision by ${printable(by)})`,
      ...fieldLines([
        ['status', completion.status],
        ['errorCode', completion.errorCode ?? '-'],
        ['reason', completion.reason ?? '-'],
        ['message', completion.message],
      ]),
      `the earlier events are kept; see 'readback ops show ${printable(id!)}'`,
      '',
    ].join('\n'),
  );
  return 0;
}

const SUBCOMMANDS: Record<string, Subcommand> = {
  list: { flags: ['store', 'status', 'action', 'limit', 'shadow', 'json'], takesId: false, run: list },
  show: { flags: ['store', 'json'], takesId: true, run: show },
  resolve: { flags: ['store', 'status', 'note', 'by', 'json'], takesId: true, run: resolveOp },
  prune: { flags: ['store', 'older-than', 'limit', 'json'], takesId: false, run: pruneOps },
};

/** `readback ops list|show|resolve|prune`: inspect a store's operations, settle stuck ones, delete old ones. */
export const opsCommand: Command = {
  summary: 'list, inspect, resolve and prune durable operations in a store',
  usage: [
    'readback ops list [--store S] [--status S] [--action A] [--limit N] [--shadow] [--json]',
    '       readback ops show <id> [--store S] [--json]',
    '       readback ops resolve <id> --status verified|failed --note "..." --by NAME [--store S] [--json]',
    '       readback ops prune --older-than <duration> [--limit N] [--store S] [--json]',
    '',
    'prune deletes settled operations requested and last changed longer ago than --older-than, with their events,',
    'in batches of --limit (pausing between them, so runs and reconcilers keep the store) until none is left; open',
    "operations and those awaiting approval are kept, however old. A pruned operation's idempotency key is free",
    'again: a repeat of its call runs as a new operation.',
  ].join('\n'),
  flags: {
    store: {
      type: 'string',
      description: `SQLite database file or postgres:// URL (?schema=name) (default ${DEFAULT_STORE})`,
    },
    status: {
      type: 'string',
      description: `list: only this status (${STATUSES.join(', ')}); resolve: verified or failed`,
    },
    action: { type: 'string', description: 'list: only operations of this action' },
    limit: {
      type: 'string',
      description: `list: at most this many operations, most recently updated first; prune: operations deleted per batch (default ${DEFAULT_PRUNE_LIMIT}, at most ${MAX_PRUNE_LIMIT})`,
    },
    'older-than': {
      type: 'string',
      description:
        'prune: delete settled operations last changed longer ago than this (required): 30d, 12h, 90m, 45s, 500ms, 2w',
    },
    shadow: {
      type: 'boolean',
      description: "list: only shadow-mode operations whose tool's claim disagreed with the verified status",
    },
    note: { type: 'string', description: 'resolve: why the operator decided so (required)' },
    by: { type: 'string', description: 'resolve: who decided (required)' },
    json: { type: 'boolean', description: 'print JSON instead of text' },
  },
  positionals: { max: 2 },
  async run({ flags, positionals }, io) {
    const [name, id] = positionals;
    if (name === undefined) {
      throw new UsageError("'readback ops' needs a subcommand: list, show, resolve or prune");
    }
    const sub = Object.hasOwn(SUBCOMMANDS, name) ? SUBCOMMANDS[name] : undefined;
    if (!sub)
      throw new UsageError(
        `unknown subcommand '${name}' for 'readback ops' (expected list, show, resolve or prune)`,
      );
    for (const flag of Object.keys(flags)) {
      if (flag !== 'help' && !sub.flags.includes(flag)) {
        throw new UsageError(`option '--${flag}' does not apply to 'readback ops ${name}'`);
      }
    }
    if (sub.takesId && id === undefined) throw new UsageError(`'readback ops ${name}' needs an operation id`);
    // An empty id is an unset shell variable (`ops show "$ID"`), not an id to look up.
    if (sub.takesId && id === '') throw new UsageError(`'readback ops ${name}': the operation id is empty`);
    if (!sub.takesId && id !== undefined) {
      throw new UsageError(`unexpected argument '${id}' for 'readback ops ${name}'`);
    }
    // Check every option before opening anything, so a typo never touches the database.
    if (name === 'list') {
      parseStatus(stringFlag(flags, 'status'));
      intFlag(flags, 'limit');
    }
    if (name === 'resolve') resolveArgs(flags);
    if (name === 'prune') pruneArgs(flags, Date.now());
    const spec = stringFlag(flags, 'store') ?? DEFAULT_STORE;
    const store = await openStore(spec);
    try {
      return await sub.run(store, id, flags, io);
    } catch (error) {
      if (error instanceof UsageError || error instanceof CommandError) throw error;
      // The store failing under the command (a read-only file, a lost connection) is the user's to fix:
      // name the store and the reason, not readback's stack.
      const reason = error instanceof Error ? error.message : String(error);
      throw new CommandError(
        `store ${redact(spec)} failed during 'readback ops ${name}': ${printable(reason)}`,
      );
    } finally {
      await store.close();
    }
  },
};
