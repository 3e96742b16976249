/**
 * Assembles the audit report: every question asked of every action, plus the checks a YAML
 * completion contract's own templates must pass. The report is plain data, printed as tables
 * or JSON by the CLI.
 */

import type { AnyAction, Mode, RepeatSafety, Status } from '../contract/types.js';
import { STATUSES } from '../contract/types.js';
import type { CompletionContract } from './contract-file.js';
import { templateProblems } from './messages.js';
import { askQuestions, type Finding } from './questions.js';

/** The audit of one action: its identity, every finding, and how many of them are debt. */
export interface ToolAudit {
  action: string;
  mode: Mode;
  system: string | null;
  safeToRepeat: RepeatSafety;
  debt: number;
  findings: Finding[];
}

/** One debt in the YAML contract itself, at a path of the file. */
export interface ContractDebt {
  path: string;
  problem: string;
}

/** The audit of a YAML contract: where it came from and what in it is debt. */
export interface ContractAudit {
  source: string;
  debt: number;
  findings: ContractDebt[];
}

/** The whole audit: per-tool findings, the contract's findings, and the total debt. */
export interface AuditReport {
  module: string | null;
  contract: ContractAudit | null;
  tools: ToolAudit[];
  debt: number;
  clean: boolean;
}

/** Asks every question of each action; rules from `contract` bind the actions' message overrides. */
export function auditActions(actions: readonly AnyAction[], contract?: CompletionContract): ToolAudit[] {
  const rules = contract?.rules ?? [];
  return actions.map((action) => {
    const findings = askQuestions(action, rules);
    return {
      action: action.name,
      mode: action.mode,
      system: action.system ?? null,
      safeToRepeat: action.safeToRepeat,
      debt: findings.filter((f) => f.verdict === 'debt').length,
      findings,
    };
  });
}

/** The debts of a YAML contract: templates that claim too much, drop the operation id, or break its rules. */
export function auditContract(contract: CompletionContract, source: string): ContractAudit {
  const findings: ContractDebt[] = [];
  for (const status of STATUSES) {
    const template = contract.messageTemplates[status as Status];
    for (const problem of templateProblems(status, template, contract.rules)) {
      findings.push({ path: `completion_contract.message_templates.${status}`, problem });
    }
  }
  if (!contract.requiredFields.includes('operation_id')) {
    findings.push({
      path: 'completion_contract.required_fields',
      problem: 'does not require operation_id: a pending or unknown outcome cannot be followed up',
    });
  }
  if (!contract.requiredFields.includes('target')) {
    findings.push({
      path: 'completion_contract.required_fields',
      problem: 'does not require target: a status cannot be tied to the object it is about',
    });
  }
  return { source, debt: findings.length, findings };
}

/** Builds the full report from the tool audits and the optional contract audit. */
export function auditReport(
  module: string | null,
  tools: ToolAudit[],
  contract: ContractAudit | null,
): AuditReport {
  const debt = tools.reduce((sum, t) => sum + t.debt, 0) + (contract?.debt ?? 0);
  return { module, contract, tools, debt, clean: debt === 0 };
}
