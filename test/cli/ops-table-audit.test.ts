import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { renderTable } from '../../src/cli/table.js';
import { sqliteStore } from '../../src/sqlite/index.js';
import { runCli, stripAnsi } from './support.js';

let dir: string;
let db: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'readback-ops-table-'));
  db = join(dir, 'ops.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

// Measured independently of table.ts: a terminal gives Han characters and these emoji two columns.
function textWidth(line: string): number {
  return [...line].reduce((n, c) => n + (/[\p{Script=Han}\u{1f300}-\u{1faff}]/u.test(c) ? 2 : 1), 0);
}

// What a terminal shows: every line of a box table must take the same number of columns.
function columnsOf(out: string): number[] {
  return stripAnsi(out)
    .split('\n')
    .filter((line) => /^[┌├└│]/.test(line))
    .map(textWidth);
}

/** Writes one requested operation with this target into the SQLite store at `path`. */
async function storeOne(path: string, id: string, action: string, target: string): Promise<void> {
  const store = await sqliteStore({ path });
  await store.reserve(
    {
      id,
      action,
      target,
      scope: {},
      fingerprint: 'f',
      idempotencyKey: 'k',
      runId: 'r',
      actor: null,
      input: {},
      requestedAt: 1,
    },
    { type: 'reserved', at: 1, from: null, to: 'requested', status: null, actor: null, attempt: 0 },
  );
  await store.close();
}

describe('tables with wide characters', () => {
  it('counts CJK and emoji as two columns, so borders stay aligned', () => {
    const out = renderTable(
      [
        { header: 'id', min: 4, max: 8 },
        { header: 'target', min: 8, grow: true },
      ],
      [['op-1', `email:${'用户'.repeat(30)}@例子.com 🚫 ok`]],
      { width: 40, maxLines: 3 },
    );
    const widths = columnsOf(out);
    expect(new Set(widths)).toEqual(new Set([40]));
    // Cut at three lines and marked.
    expect(out).toContain('…');
  });

  // A model-chosen target in Chinese pushed the right border of every wrapped line past the terminal's edge.
  it('ops list on a narrow terminal keeps every line within its width', async () => {
    await storeOne(db, 'op-wide', 'send_email', `email:${'用户'.repeat(25)}@例子.com`);
    for (const tty of [60, 100]) {
      const r = await runCli(['ops', 'list', '--store', db], { tty });
      expect(r.code).toBe(0);
      const widths = columnsOf(r.stdout);
      expect(widths.length).toBeGreaterThan(4);
      expect(new Set(widths).size).toBe(1);
      expect(widths[0]).toBeLessThanOrEqual(tty);
      expect(r.stdout.replace(/[\s│]/g, '')).toContain('用户用户');
    }
  });
});

describe('stored text that reorders the terminal', () => {
  // A target with U+202E (right-to-left override) reached the terminal raw and displayed reversed text, so
  // `ticket:T-104\u202e901-T` could pass for another ticket in `ops list`.
  it('escapes bidirectional overrides and isolates in list cells', async () => {
    await storeOne(db, 'op-bidi', 'update_ticket', 'ticket:T-104\u202e901-T\u2066x\u2069');
    for (const args of [['list'], ['show', 'op-bidi']]) {
      const r = await runCli(['ops', ...args, '--store', db]);
      expect(r.code).toBe(0);
      expect(r.stdout).not.toMatch(/[\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
      expect(r.stdout).toContain('ticket:T-104\\u202e901-T\\u2066x\\u2069');
    }
  });
});
