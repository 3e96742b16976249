import {
  type AuditReport,
  auditActions,
  auditContract,
  auditReport,
  type ToolAudit,
} from '../audit/audit.js';
import { type CompletionContract, formatProblem, parseCompletionContract } from '../audit/contract-file.js';
import { QUESTIONS, type Verdict } from '../audit/questions.js';
import type { CliIO, Command, ParsedArgs } from './args.js';
import { UsageError } from './args.js';
import { CommandError, outputWidth, readUtf8, stringFlag } from './format.js';
import { loadActions } from './reconcile.js';
import { type Cell, type Column, type Palette, palette, renderTable } from './table.js';

/** The exit code when the audit found completion-ownership debt (0 is clean; 1 and 2 are errors). */
export const DEBT_EXIT_CODE = 3;

/** Reads and validates a YAML completion contract file; every problem is reported with its path and line. */
export function readContractFile(path: string): CompletionContract {
  const text = readUtf8(path, 'contract file');
  const result = parseCompletionContract(text);
  if (!result.ok) {
    const lines = result.problems.map((p) => `  ${formatProblem(p, path)}`);
    const count = result.problems.length;
    throw new CommandError(
      `contract file ${path} is invalid (${count} problem${count === 1 ? '' : 's'}):\n${lines.join('\n')}`,
    );
  }
  return result.contract;
}

const ASK = new Map(QUESTIONS.map((q) => [q.id, q]));

const TOOL_COLUMNS: Column[] = [
  { header: 'question', min: 24, max: 40 },
  { header: 'verdict', min: 7, max: 7 },
  { header: 'answer (and fix, for debt)', min: 30, grow: true },
];

const VERDICT: Record<Verdict, (p: Palette) => Cell> = {
  answered: (p) => [{ text: 'ok', style: p.green }],
  debt: (p) => [{ text: 'DEBT', style: p.red }],
  not_applicable: (p) => [{ text: 'n/a', style: p.dim }],
};

function toolHeading(tool: ToolAudit): string {
  const system = tool.system === null ? 'system not named' : `system: ${tool.system}`;
  const debt = tool.debt === 0 ? 'no debt' : `${tool.debt} debt${tool.debt === 1 ? '' : 's'}`;
  return `${tool.action} (${tool.mode}, ${system}, safeToRepeat: ${String(tool.safeToRepeat)}): ${debt}`;
}

function toolTable(tool: ToolAudit, p: Palette, width: number): string {
  const rows: Cell[][] = tool.findings.map((f) => {
    const question = ASK.get(f.question)!;
    const answer: Cell = [{ text: f.answer }];
    if (f.fix !== undefined) answer.push({ text: `fix: ${f.fix}`, style: p.yellow });
    return [
      [{ text: `${question.id}` }, { text: question.ask, style: p.dim }],
      VERDICT[f.verdict](p),
      answer,
    ];
  });
  return renderTable(TOOL_COLUMNS, rows, { width, headerStyle: p.bold });
}

/** The human form of an audit report: one table per tool, the contract's debts, and a total line. */
export function renderAudit(report: AuditReport, options: { color: boolean; width: number }): string {
  const p = palette(options.color);
  const out: string[] = [];
  if (report.contract !== null) {
    const c = report.contract;
    out.push(
      p.bold(
        `contract ${c.source}: ${c.debt === 0 ? 'no debt' : `${c.debt} debt${c.debt === 1 ? '' : 's'}`}`,
      ),
    );
    for (const f of c.findings) out.push(`  ${p.red('DEBT')} ${f.path}: ${f.problem}`);
    out.push('');
  }
  for (const tool of report.tools) {
    out.push(p.bold(toolHeading(tool)), toolTable(tool, p, options.width), '');
  }
  const indebted = report.tools.filter((t) => t.debt > 0).length;
  const tools = `${report.tools.length} tool${report.tools.length === 1 ? '' : 's'}`;
  out.push(
    report.clean
      ? `audit: clean: ${tools}, every question answered`
      : `audit: ${report.debt} debt${report.debt === 1 ? '' : 's'} (${indebted} of ${tools} indebted${
          report.contract && report.contract.debt > 0 ? ', contract indebted' : ''
        })`,
  );
  return `${out.join('\n')}\n`;
}

async function runAudit({ flags, positionals }: ParsedArgs, io: CliIO): Promise<number> {
  const modulePath = positionals[0];
  const contractPath = stringFlag(flags, 'contract');
  if (modulePath === undefined && contractPath === undefined) {
    throw new UsageError("'readback audit' needs an actions module, a --contract file, or both");
  }
  const contract = contractPath === undefined ? undefined : readContractFile(contractPath);
  const actions = modulePath === undefined ? [] : await loadActions(modulePath);
  const report = auditReport(
    modulePath ?? null,
    auditActions(actions, contract),
    contract === undefined || contractPath === undefined ? null : auditContract(contract, contractPath),
  );
  if (flags.json === true) {
    io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const color = io.stdout.isTTY === true && flags['no-color'] !== true && !io.env?.NO_COLOR;
    io.stdout.write(renderAudit(report, { color, width: outputWidth(io.stdout) }));
  }
  return report.clean ? 0 : DEBT_EXIT_CODE;
}

/** `readback audit`: asks each action the completion-ownership questions and reports the debt. */
export const auditCommand: Command = {
  summary: 'report the completion-ownership debt of a module of actions (exit 3 when there is debt)',
  usage:
    'readback audit [<module>] [--contract <file.yaml>] [--json] [--no-color]\n\n' +
    `exit status: 0 no debt, ${DEBT_EXIT_CODE} debt found, 1 module or contract error, 2 usage mistake`,
  positionals: { max: 1 },
  flags: {
    contract: {
      type: 'string',
      description:
        'YAML completion contract (docs/completion-contract.md): validated, its templates audited, its rules applied to each tool',
    },
    json: { type: 'boolean', description: 'print the report as JSON' },
    'no-color': { type: 'boolean', description: 'never color the output (NO_COLOR is honored too)' },
  },
  run: runAudit,
};
