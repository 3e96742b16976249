/** A styling function applied to already padded text, so escape codes never disturb the layout. */
export type Style = (text: string) => string;

/** A run of text in a cell with one style; each segment starts on a new line. */
export interface Segment {
  text: string;
  style?: Style;
}

/** A cell: plain text, or segments with their own styles (a name, then a dim note). */
export type Cell = string | Segment[];

/** A column: its header, preferred minimum and maximum width; the one `grow` column takes what is left. */
export interface Column {
  header: string;
  min: number;
  max?: number;
  grow?: boolean;
}

/** Layout options: the total width to fit and how many lines a cell may use before it is cut. */
export interface TableOptions {
  width: number;
  maxLines?: number;
  headerStyle?: Style;
}

const plain: Style = (text) => text;

/** ANSI styles, or no-ops when color is off, so callers style unconditionally. */
export function palette(color: boolean) {
  const sgr =
    (open: number, close: number): Style =>
    (text) =>
      color && text !== '' ? `\u001b[${open}m${text}\u001b[${close}m` : text;
  return {
    bold: sgr(1, 22),
    dim: sgr(2, 22),
    red: sgr(31, 39),
    green: sgr(32, 39),
    yellow: sgr(33, 39),
    magenta: sgr(35, 39),
    cyan: sgr(36, 39),
  };
}

/** The styles `palette` returns. */
export type Palette = ReturnType<typeof palette>;

/** Word-wraps text to `width` columns, breaking words longer than a line; keeps explicit line breaks. */
export function wrap(text: string, width: number): string[] {
  const size = Math.max(1, width);
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    for (const word of paragraph.split(/\s+/).filter((w) => w !== '')) {
      let rest = word;
      const room = line === '' ? size : size - textWidth(line) - 1;
      if (textWidth(rest) <= room) {
        line = line === '' ? rest : `${line} ${rest}`;
        continue;
      }
      if (line !== '') lines.push(line);
      line = '';
      while (textWidth(rest) > size) {
        const head = fitting(rest, size);
        lines.push(head);
        rest = rest.slice(head.length);
      }
      line = rest;
    }
    lines.push(line);
  }
  return lines;
}

// Terminals give East Asian wide and fullwidth characters and most emoji two columns, and combining marks and
// zero-width joiners none; counting code points let a Chinese target push every border to the right.
const WIDE =
  /[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{1f300}-\u{1f64f}\u{1f680}-\u{1f6ff}\u{1f900}-\u{1f9ff}\u{20000}-\u{3fffd}]/u;
const COMBINING = /^[\p{Mn}\p{Me}]$/u;

function charWidth(char: string): number {
  const code = char.codePointAt(0) ?? 0;
  // Zero-width space and joiners, and the text/emoji variation selectors.
  if ((code >= 0x200b && code <= 0x200d) || code === 0xfe0e || code === 0xfe0f || COMBINING.test(char))
    return 0;
  return WIDE.test(char) ? 2 : 1;
}

/** The columns a terminal gives `text`: wide characters count two, combining marks none. */
export function textWidth(text: string): number {
  let width = 0;
  for (const char of text) width += charWidth(char);
  return width;
}

// The longest start of `text` that fits `width` columns; at least one character, so wrapping always advances.
function fitting(text: string, width: number): string {
  let used = 0;
  let end = 0;
  for (const char of text) {
    const w = charWidth(char);
    if (used + w > width && end > 0) break;
    used += w;
    end += char.length;
  }
  return text.slice(0, end);
}

function segmentsOf(cell: Cell): Segment[] {
  return typeof cell === 'string' ? [{ text: cell }] : cell;
}

// The widest a cell would be unwrapped: each segment line on its own.
function natural(cell: Cell): number {
  return Math.max(0, ...segmentsOf(cell).flatMap((s) => s.text.split('\n').map((line) => textWidth(line))));
}

// Below its preferred minimum a column still keeps this many characters before the layout gives up.
const HARD_MIN = 4;

// Cuts one character at a time from the column with the most room above its floor, so the cut is
// spread over the columns in proportion to their slack instead of crushing the widest one.
function shrink(widths: number[], floors: readonly number[], budget: number, skip = -1): void {
  for (let over = widths.reduce((a, b) => a + b, 0) - budget; over > 0; over--) {
    let pick = -1;
    widths.forEach((w, i) => {
      const room = w - floors[i]!;
      if (i !== skip && room > 0 && (pick < 0 || room > widths[pick]! - floors[pick]!)) pick = i;
    });
    if (pick < 0) return;
    widths[pick]!--;
  }
}

function layout(columns: readonly Column[], rows: readonly Cell[][], total: number): number[] {
  const wants = columns.map((c, i) =>
    Math.max(c.min, textWidth(c.header), ...rows.map((r) => natural(r[i] ?? ''))),
  );
  const widths = columns.map((c, i) => Math.min(wants[i]!, c.max ?? Number.POSITIVE_INFINITY));
  const budget = total - (3 * columns.length + 1);
  const mins = columns.map((c) => c.min);
  const grow = columns.findIndex((c) => c.grow);
  if (grow >= 0) {
    // The grow column holds the longest text: reserve it a fair share before the others are settled.
    widths[grow] = Math.min(wants[grow]!, Math.max(mins[grow]!, Math.floor(budget * 0.3)));
    shrink(widths, mins, budget, grow);
    const others = widths.reduce((sum, w, i) => (i === grow ? sum : sum + w), 0);
    widths[grow] = Math.min(wants[grow]!, Math.max(mins[grow]!, budget - others));
  }
  shrink(widths, mins, budget);
  // A very narrow terminal: give up the preferred minimums too.
  shrink(
    widths,
    columns.map(() => HARD_MIN),
    budget,
  );
  return widths;
}

function cellLines(cell: Cell, size: number, maxLines: number): { text: string; style: Style }[] {
  const lines = segmentsOf(cell).flatMap((s) =>
    wrap(s.text, size).map((text) => ({ text, style: s.style ?? plain })),
  );
  if (lines.length <= maxLines) return lines;
  const kept = lines.slice(0, maxLines);
  const last = kept[maxLines - 1]!;
  // Mark the cut, so a reader knows the cell continues rather than ends mid-thought.
  last.text = `${fitting(last.text, size - 1)}…`;
  return kept;
}

/** Renders rows as a box-drawn table that fits `width` columns, wrapping and cutting long cells. */
export function renderTable(
  columns: readonly Column[],
  rows: readonly Cell[][],
  options: TableOptions,
): string {
  const widths = layout(columns, rows, options.width);
  const maxLines = options.maxLines ?? Number.POSITIVE_INFINITY;
  const rule = (left: string, mid: string, right: string) =>
    `${left}${widths.map((w) => '─'.repeat(w + 2)).join(mid)}${right}`;
  const line = (cells: readonly Cell[], styleAll?: Style): string[] => {
    const wrapped = widths.map((w, i) => cellLines(cells[i] ?? '', w, maxLines));
    const height = Math.max(1, ...wrapped.map((c) => c.length));
    const out: string[] = [];
    for (let n = 0; n < height; n++) {
      const parts = wrapped.map((c, i) => {
        const piece = c[n] ?? { text: '', style: plain };
        const padded = piece.text + ' '.repeat(Math.max(0, widths[i]! - textWidth(piece.text)));
        return (styleAll ?? piece.style)(padded);
      });
      out.push(`│ ${parts.join(' │ ')} │`);
    }
    return out;
  };
  const out = [
    rule('┌', '┬', '┐'),
    ...line(
      columns.map((c) => c.header),
      options.headerStyle,
    ),
  ];
  rows.forEach((row) => {
    out.push(rule('├', '┼', '┤'), ...line(row));
  });
  out.push(rule('└', '┴', '┘'));
  return out.join('\n');
}
