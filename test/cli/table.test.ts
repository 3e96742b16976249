import { describe, expect, it } from 'vitest';
import { type Column, palette, renderTable, wrap } from '../../src/cli/table.js';
import { stripAnsi, widest } from './support.js';

const columns: Column[] = [
  { header: 'name', min: 4, max: 10 },
  { header: 'text', min: 8, grow: true },
];

describe('wrap', () => {
  it('breaks on spaces, keeps line breaks and splits words longer than the width', () => {
    expect(wrap('the quick brown fox', 9)).toEqual(['the quick', 'brown fox']);
    expect(wrap('a\nb c', 10)).toEqual(['a', 'b c']);
    expect(wrap('abcdefghij k', 4)).toEqual(['abcd', 'efgh', 'ij k']);
    expect(wrap('', 5)).toEqual(['']);
  });
});

describe('renderTable', () => {
  const rows = [
    ['alpha', 'a long sentence that has to wrap over several lines of the text column'],
    [[{ text: 'beta' }, { text: 'note', style: palette(true).dim }], 'short'],
  ];

  it('fits the width it is given and draws a box around every row', () => {
    for (const width of [30, 50, 90]) {
      const out = renderTable(columns, rows, { width });
      expect(widest(out)).toBeLessThanOrEqual(width);
      const lines = out.split('\n');
      expect(lines[0]!.startsWith('┌')).toBe(true);
      expect(lines.at(-1)!.startsWith('└')).toBe(true);
      expect(lines.filter((l) => l.startsWith('├'))).toHaveLength(2);
    }
  });

  it('cuts a cell at maxLines and marks the cut', () => {
    const out = renderTable(columns, rows, { width: 30, maxLines: 2 });
    const textCells = out
      .split('\n')
      .filter((l) => l.startsWith('│'))
      .map((l) => l.split('│')[2]!.trim());
    expect(textCells.some((t) => t.endsWith('…'))).toBe(true);
    expect(
      out.split('\n').filter((l) => l.startsWith('│ alpha') || l.startsWith('│      ')).length,
    ).toBeLessThanOrEqual(3);
  });

  it('applies styles after padding, so styled cells stay aligned', () => {
    const styled = [[[{ text: 'beta' }, { text: 'n', style: (s: string) => `<${s}>` }], 'short']];
    const out = renderTable(columns, styled, { width: 40 });
    const line = out.split('\n').find((l) => l.includes('<'))!;
    expect(line).toMatch(/│ <n {3}> │/);
  });

  it('palette styles only when color is on', () => {
    expect(palette(false).red('x')).toBe('x');
    expect(stripAnsi(palette(true).red('x'))).toBe('x');
    expect(palette(true).red('x')).not.toBe('x');
  });
});
