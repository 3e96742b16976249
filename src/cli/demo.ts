import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Completion, RunContext, Status } from '../contract/types.js';
import { type GuardResult, guardAnswer, summarize } from '../messages/index.js';
import { createRunner, type Runner } from '../runner/runner.js';
import type { OperationStore } from '../store/types.js';
import { FakeClock } from '../testing/fakes/fake-clock.js';
import type { MailSnapshot } from '../testing/fakes/mail.js';
import { createHelpdesk, type Helpdesk } from '../testing/helpdesk.js';
import { type Command, UsageError } from './args.js';
import { loadDemoState, saveDemoState } from './demo-state.js';
import { CommandError, stringFlag } from './format.js';
import { DEFAULT_STORE, openStore } from './store.js';
import { type Column, type Palette, palette, renderTable, type Style, wrap } from './table.js';

/** One scripted tool call: what the agent asked, the fault switched on, and what it did not know. */
export interface DemoRow {
  tool: string;
  /** The call's arguments, shortened for a table. */
  args: string;
  /** The injected fault, in plain words; null for a clean call. */
  fault: string | null;
  /** False when the runner never called the tool (the baseline already satisfied the request). */
  called: boolean;
  /** What the tool itself returned or threw, as recorded in the operation's event log. */
  raw: unknown;
  /** `raw`, shortened for a table: `{ok:true}`, `queued msg-0002`, `threw ETIMEDOUT`. */
  toolReturned: string;
  /** What an agent that trusts the tool's own answer would tell the user. */
  naive: string;
  /** Whether that naive sentence reports success. */
  naiveClaimsSuccess: boolean;
  completion: Completion;
}

/** Everything the demo produced, returned as data so tests and `--json` read the same facts. */
export interface DemoResult {
  rows: DemoRow[];
  completions: Completion[];
  /** The honest final answer, from `summarize`. */
  summary: string;
  /** The final answer an agent trusting raw results would write. */
  naiveAnswer: string;
  guard: { naive: GuardResult; honest: GuardResult };
  gap: { calls: number; naiveClaimedSuccess: number; verified: number; naiveCalledFailed: number };
  /** The fakes behind the demo, so tests can check the real effects. */
  helpdesk: Helpdesk;
}

/** The answer a naive agent gives after the scripted calls, trusting every 200 it saw. */
export const NAIVE_ANSWER =
  'Done! I resolved the tickets, sent all three emails, refunded order 42, migrated all 100 records and paged the on-call engineer.';

interface Step {
  tool: string;
  args: string;
  fault: string | null;
  /** What the naive agent says when the tool answers, and when it throws. */
  says: { ok: string; threw: string };
  call(hd: Helpdesk, runner: Runner, ctx: RunContext): Promise<Completion>;
}

const proposal = { subject: 'Your proposal', body: 'Attached, as discussed.' };

// The script, in order. Faults are armed right before the call they should hit, because they are one-shot.
const STEPS: Step[] = [
  {
    tool: 'update_ticket',
    args: 'T-104 → resolved',
    fault: null,
    says: { ok: 'Done — T-104 resolved', threw: 'Could not resolve T-104' },
    call: (hd, r, ctx) => r.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx),
  },
  {
    tool: 'update_ticket',
    args: 'T-105 → resolved',
    fault: 'already resolved',
    says: { ok: 'Done — T-105 resolved', threw: 'Could not resolve T-105' },
    call: (hd, r, ctx) => r.run(hd.actions.updateTicket, { id: 'T-105', status: 'resolved' }, ctx),
  },
  {
    tool: 'send_email',
    args: 'ana@example.com',
    fault: null,
    says: { ok: 'Done — email sent to Ana', threw: 'Email to Ana failed' },
    call: (hd, r, ctx) => r.run(hd.actions.sendEmail, { to: 'ana@example.com', ...proposal }, ctx),
  },
  {
    tool: 'send_email',
    args: 'bo@example.com',
    fault: 'queue dropped in a failover',
    says: { ok: 'Done — email sent to Bo', threw: 'Email to Bo failed' },
    call: (hd, r, ctx) => {
      hd.mail.faults.nextOutcome = 'dropped';
      return r.run(hd.actions.sendEmail, { to: 'bo@example.com', ...proposal }, ctx);
    },
  },
  {
    tool: 'refund_order',
    args: 'order 42, $19.99',
    fault: 'response lost after the ledger committed',
    says: { ok: 'Done — order 42 refunded', threw: 'Refund failed (timeout) — retry?' },
    call: (hd, r, ctx) => {
      hd.ledger.faults.loseNextResponse = true;
      return r.run(hd.actions.refundOrder, { orderId: '42', amountCents: 1999 }, ctx);
    },
  },
  {
    tool: 'update_ticket',
    args: 'T-106 → resolved',
    fault: 'write soft-fails (renamed table)',
    says: { ok: 'Done — T-106 resolved', threw: 'Could not resolve T-106' },
    call: (hd, r, ctx) => {
      hd.tickets.faults.softFailNextWrite = true;
      return r.run(hd.actions.updateTicket, { id: 'T-106', status: 'resolved' }, ctx);
    },
  },
  {
    tool: 'migrate_records',
    args: '100 records → v2',
    fault: 'rec-017 and rec-063 silently skipped',
    says: { ok: 'Done — 100 records migrated', threw: 'Migration failed' },
    call: (hd, r, ctx) => {
      const ids = hd.batch.seed(100);
      hd.batch.faults.failIds.add('rec-017').add('rec-063');
      return r.run(hd.actions.migrateRecords, { ids, toVersion: 2 }, ctx);
    },
  },
  {
    tool: 'send_email',
    args: 'cy@example.com (wait: false)',
    fault: 'agent does not wait for delivery',
    says: { ok: 'Done — email sent to Cy', threw: 'Email to Cy failed' },
    call: (hd, r, ctx) =>
      r.run(
        hd.actions.sendEmail,
        { to: 'cy@example.com', subject: 'Meeting notes', body: 'Notes from today.' },
        { ...ctx, wait: false },
      ),
  },
  {
    tool: 'page_oncall',
    args: '"T-106 write failing"',
    fault: 'pager has no read API',
    says: { ok: 'Done — on-call paged', threw: 'Paging failed' },
    call: (hd, r, ctx) => r.run(hd.actions.pageOncall, { message: 'T-106 write failing' }, ctx),
  },
];

/** What the tool returned or threw, from the operation's event log (the runner records it there). */
async function rawResult(runner: Runner, operationId: string): Promise<{ called: boolean; raw: unknown }> {
  for (const event of await runner.store.events(operationId)) {
    const detail = event.detail ?? {};
    if ('error' in detail) return { called: true, raw: { threw: detail.error } };
    if ('raw' in detail) return { called: true, raw: detail.raw };
  }
  return { called: false, raw: null };
}

function compact(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(compact).join(', ')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.entries(value)
      .map(([k, v]) => `${k}:${compact(v)}`)
      .join(', ')}}`;
  }
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

function shorten(called: boolean, raw: unknown): string {
  if (!called) return 'not called (already in that state)';
  const r = raw as Record<string, unknown> | null;
  if (r && typeof r.threw === 'string') return `threw ${/^([A-Z_]+):/.exec(r.threw)?.[1] ?? r.threw}`;
  if (r && r.status === 'queued' && typeof r.messageId === 'string') return `queued ${r.messageId}`;
  return compact(raw);
}

/** Where the demo records its operations and how it names them; all optional (defaults: memory, `op-01`…). */
export interface DemoOptions {
  store?: OperationStore;
  /** Start of the demo's simulated timeline, in ms since the epoch. */
  clockStart?: number;
  idPrefix?: string;
  runId?: string;
  /** The mail queue an earlier run left, restored before the script so its pending emails stay findable. */
  mail?: MailSnapshot;
}

/**
 * Runs the scripted helpdesk agent: nine tool calls through one runner on the helpdesk's fake
 * clock (instant, offline), with faults armed, then guards the naive and the honest final answers.
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoResult> {
  const hd = createHelpdesk(
    options.clockStart === undefined ? {} : { clock: new FakeClock(options.clockStart) },
  );
  if (options.mail) hd.mail.restore(options.mail);
  hd.tickets.seed([
    { id: 'T-104', tenant: 'acme' },
    { id: 'T-105', tenant: 'acme', status: 'resolved' },
    { id: 'T-106', tenant: 'acme' },
  ]);
  let seq = 0;
  // Short, stable operation ids and fixed jitter, so the demo prints the same thing every time.
  const prefix = options.idPrefix ?? 'op-';
  const runner = createRunner({
    clock: hd.clock,
    random: () => 0.5,
    newId: () => `${prefix}${String(++seq).padStart(2, '0')}`,
    ...(options.store ? { store: options.store } : {}),
  });
  const ctx: RunContext = {
    runId: options.runId ?? 'demo',
    scope: { tenant: 'acme' },
    actor: 'helpdesk-agent',
  };
  const rows: DemoRow[] = [];
  for (const step of STEPS) {
    const completion = await step.call(hd, runner, ctx);
    const { called, raw } = await rawResult(runner, completion.operationId);
    const threw = called && typeof (raw as { threw?: unknown } | null)?.threw === 'string';
    rows.push({
      tool: step.tool,
      args: step.args,
      fault: step.fault,
      called,
      raw,
      toolReturned: shorten(called, raw),
      // Without readback the agent would have called the tool anyway and been told ok.
      naive: threw ? step.says.threw : step.says.ok,
      naiveClaimsSuccess: !threw,
      completion,
    });
  }
  const completions = rows.map((r) => r.completion);
  const summary = summarize(completions);
  const count = (s: Status) => completions.filter((c) => c.status === s).length;
  return {
    rows,
    completions,
    summary,
    naiveAnswer: NAIVE_ANSWER,
    guard: { naive: guardAnswer(NAIVE_ANSWER, completions), honest: guardAnswer(summary, completions) },
    gap: {
      calls: rows.length,
      naiveClaimedSuccess: rows.filter((r) => r.naiveClaimsSuccess).length,
      verified: count('verified'),
      naiveCalledFailed: rows.filter((r) => !r.naiveClaimsSuccess && r.completion.status === 'verified')
        .length,
    },
    helpdesk: hd,
  };
}

/** The `--json` document: the completions, the naive agent's view of each call, and the guard verdicts. */
export function demoJson(result: DemoResult) {
  return {
    completions: result.completions,
    naive: result.rows.map((r) => ({
      tool: r.tool,
      args: r.args,
      fault: r.fault,
      called: r.called,
      toolReturned: r.raw,
      says: r.naive,
      claimsSuccess: r.naiveClaimsSuccess,
    })),
    guard: {
      naiveAnswer: result.naiveAnswer,
      naive: result.guard.naive,
      honestAnswer: result.summary,
      honest: result.guard.honest,
      gap: result.gap,
    },
  };
}

/** The five table columns, in order. */
export const DEMO_COLUMNS: readonly Column[] = [
  { header: 'tool', min: 13, max: 19 },
  { header: 'tool returned', min: 9, max: 16 },
  { header: 'naive agent would say', min: 10, max: 21 },
  { header: 'readback status', min: 15, max: 17 },
  { header: 'allowed message', min: 16, grow: true },
];

function statusStyle(p: Palette, status: Status): Style {
  const styles: Record<Status, Style> = {
    verified: p.green,
    no_op: p.cyan,
    pending: p.yellow,
    partial: p.yellow,
    unknown: p.magenta,
    failed: p.red,
  };
  return (text) => p.bold(styles[status](text));
}

// Hanging indent, so wrapped summary lines stay visibly inside their bullet.
function indent(text: string, width: number, first: string, rest: string): string[] {
  return wrap(text, width - first.length).map((line, i) => (i === 0 ? first : rest) + line);
}

/** Renders the demo for a terminal: the table, the honest summary, the guard verdicts and the gap. */
export function renderDemo(result: DemoResult, options: { color: boolean; width: number }): string {
  const p = palette(options.color);
  const { width } = options;
  const rows = result.rows.map((r) => {
    const c = r.completion;
    const contradicted = r.naiveClaimsSuccess !== (c.status === 'verified');
    return [
      [
        { text: r.tool, style: p.bold },
        { text: r.args },
        ...(r.fault ? [{ text: `fault: ${r.fault}`, style: p.dim }] : []),
      ],
      r.toolReturned,
      [{ text: r.naive, ...(contradicted ? { style: p.red } : {}) }],
      [
        { text: c.status, style: statusStyle(p, c.status) },
        ...(c.errorCode ? [{ text: c.errorCode, style: p.dim }] : []),
      ],
      c.message,
    ];
  });
  const plainStyle: Style = (text) => text;
  const para = (text: string, style: Style, first = '', rest = first) =>
    indent(text, width, first, rest).map(style);
  const out = [
    ...para(
      `readback demo: a helpdesk agent makes ${result.rows.length} tool calls with faults switched on`,
      p.bold,
    ),
    ...para(
      '(fake systems on a fake clock: no network, no keys; every call goes through one readback runner)',
      p.dim,
    ),
    '',
    renderTable(DEMO_COLUMNS, rows, { width, maxLines: 6, headerStyle: p.bold }),
    '',
    p.bold('Honest final answer (summarize):'),
    ...result.summary
      .split('\n')
      .flatMap((line) =>
        line.startsWith('- ')
          ? indent(line.slice(2), width, '  - ', '    ')
          : indent(line, width, '  ', '  '),
      ),
    '',
    p.bold('Final-answer guard (guardAnswer):'),
  ];
  const { naive, honest } = result.guard;
  const verdict = (ok: boolean) => (ok ? p.green('accepted') : p.red('rejected'));
  const count = (n: number) => `${n} violation${n === 1 ? '' : 's'}`;
  // Lines holding colored words stay short and unwrapped: wrap() measures plain text only.
  out.push(`  naive answer ${verdict(naive.ok)}, ${count(naive.violations.length)}:`);
  out.push(...indent(`“${result.naiveAnswer}”`, width, '    ', '    '));
  for (const v of naive.violations) {
    // The guard's own detail is long; for attributed claims the action, target and status say it all.
    const about =
      v.kind === 'unverified_claim' ? `“${v.claim}”: ${v.action} on ${v.target} is ${v.status}` : v.detail;
    out.push(...indent(about, width, '    ✗ ', '      '));
  }
  out.push(`  honest summary ${verdict(honest.ok)}, ${count(honest.violations.length)}`, '');
  const { gap } = result;
  out.push(
    ...para(
      `Gap: naive agent claimed success for ${gap.naiveClaimedSuccess} of ${gap.calls} calls; readback verified ${gap.verified}.`,
      p.bold,
      '',
      '  ',
    ),
  );
  const missed = result.rows.filter((r) => !r.naiveClaimsSuccess && r.completion.status === 'verified');
  if (missed.length > 0) {
    const which = missed.map((r) => `${r.tool} ${r.args}`).join('; ');
    out.push(
      ...para(
        `It also reported ${missed.length} verified call${missed.length === 1 ? '' : 's'} as failed (${which}); an agent that retries on that answer repeats an effect that already happened.`,
        plainStyle,
        '  ',
      ),
    );
  }
  return `${out.join('\n')}\n`;
}

// SQLite reports a store under a file (a stray `.readback` file) as "unable to open database file"; name it.
function blockedParent(storePath: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:\/\/|^~/i.test(storePath)) return undefined;
  for (let dir = dirname(resolve(storePath)); ; dir = dirname(dir)) {
    if (existsSync(dir)) return statSync(dir).isDirectory() ? undefined : dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/** `readback demo`: runs the scripted agent and prints the table, or one JSON document with `--json`. */
export const demoCommand: Command = {
  summary: 'run a scripted helpdesk agent through readback and show what it would have claimed',
  usage: 'readback demo [--json] [--no-color] [--store PATH | --no-store]',
  flags: {
    json: { type: 'boolean', description: 'print { completions, naive, guard } as one JSON document' },
    'no-color': { type: 'boolean', description: 'never color the output (NO_COLOR is honored too)' },
    store: {
      type: 'string',
      description: `SQLite file to record operations in: a new file, or a store readback wrote (default ${DEFAULT_STORE})`,
    },
    'no-store': { type: 'boolean', description: 'keep operations in memory only' },
  },
  async run({ flags }, io) {
    if (flags['no-store'] === true && flags.store !== undefined) {
      throw new UsageError("give either '--store' or '--no-store', not both");
    }
    const storePath = flags['no-store'] === true ? undefined : (stringFlag(flags, 'store') ?? DEFAULT_STORE);
    // The demo's fake mail provider is saved in a file beside the store, so the store is a SQLite file; a URL
    // (a Postgres store, say) is refused before anything is written, naming only its scheme, never its password.
    const scheme = storePath === undefined ? undefined : /^([a-z][a-z0-9+.-]*):\/\//i.exec(storePath)?.[1];
    if (scheme !== undefined) {
      throw new UsageError(
        `'readback demo' records into a SQLite file, and --store got a ${scheme}:// URL; pass a file path (e.g. --store demo.db) or --no-store`,
      );
    }
    const stamp = Date.now().toString(36);
    const blocker = storePath === undefined ? undefined : blockedParent(storePath);
    if (blocker !== undefined) {
      throw new CommandError(
        `cannot record the demo in ${storePath}: ${blocker} is a file, not a directory; move it or pass --store PATH`,
      );
    }
    const store = storePath === undefined ? undefined : await openStore(storePath, { create: true });
    // The provider state beside the store holds every earlier run's emails: a second demo must not erase the
    // first one's pending email, or `reconcile` could no longer find it and would call it unknown.
    const mail = storePath === undefined ? undefined : loadDemoState(storePath);
    let result: DemoResult;
    try {
      result = await runDemo(
        store
          ? // Unique ids per run, and a simulated timeline in the recent past, so what the demo left pending
            // is already due when `readback reconcile --once` looks at the store.
            {
              store,
              idPrefix: `op-${stamp}-`,
              runId: `demo-${stamp}`,
              clockStart: Date.now() - 10 * 60_000,
              ...(mail ? { mail } : {}),
            }
          : {},
      );
      if (storePath) saveDemoState(storePath, result.helpdesk);
    } finally {
      await store?.close();
    }
    if (flags.json) {
      io.stdout.write(`${JSON.stringify({ ...demoJson(result), store: storePath ?? null }, null, 2)}\n`);
      return 0;
    }
    const tty = io.stdout.isTTY === true;
    const color = tty && flags['no-color'] !== true && !io.env?.NO_COLOR;
    // Off a terminal there is no width to ask for; 120 columns reads well in logs and READMEs.
    const width = tty && io.stdout.columns ? Math.max(60, io.stdout.columns) : 120;
    io.stdout.write(renderDemo(result, { color, width }));
    if (storePath) {
      io.stdout.write(
        `\nOperations recorded in ${storePath}: \`npx readback ops list\` lists them, ` +
          `\`npx readback ops show <id>\` shows one's timeline, and \`npx readback reconcile --once\` ` +
          'settles the pending email.\n',
      );
    }
    return 0;
  },
};
