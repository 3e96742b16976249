/**
 * How the guard reads letters: the words a person sees, not the code points that spell them. Invisible format
 * characters are dropped, and letters that print as Latin ones (other scripts' lookalikes, fullwidth, small
 * capitals, circled, super- and subscript, and the styled "mathematical" alphabets of bold or italic text) are
 * read as those Latin letters, so "𝐝𝐨𝐧𝐞", "ᴅᴏɴᴇ" or "dоne" with a Cyrillic о claim what "done" claims.
 */

// Format and other invisible characters (zero-width space and joiners, soft hyphen, bidi marks, BOM, variation
// selectors): inside a word they hide it from matching ("sen\u200bt") while the reader still sees "sent".
const INVISIBLE = /\p{Cf}|\u034f|[\ufe00-\ufe0f]/gu;

/** Removes invisible format characters, so the guard reads the words a person sees. */
export function stripInvisible(text: string): string {
  return text.replace(INVISIBLE, '');
}

// Letters other scripts write exactly like Latin ones in common fonts: "dоne" with a Cyrillic о reads as "done" to a
// person, as "d" and "ne" to an ASCII word match. Each entry is the lookalike and the ASCII letter it passes for;
// letters that only resemble one (Cyrillic и, Greek ε) are left out. Small capitals (ᴅᴏɴᴇ) are Latin letters
// drawn small, which Unicode gives no compatibility mapping.
const LOOKALIKE_TABLE =
  // Cyrillic
  '\u0430a \u0441c \u0435e \u04bbh \u0456i \u0458j \u043ak \u043eo \u0440p \u051bq \u0455s \u0443y ' +
  '\u0445x \u0501d \u051dw \u0475v \u0410A \u0412B \u0421C \u0415E \u041dH \u0406I \u0408J \u041aK ' +
  '\u041cM \u041eO \u0420P \u0405S \u0422T \u0425X \u0423Y \u0500D \u051aQ \u051cW ' +
  // Greek
  '\u03b1a \u03bfo \u03c1p \u03bdv \u03b9i \u03bak \u03c7x \u03c5u \u0391A \u0392B \u0395E \u0396Z ' +
  '\u0397H \u0399I \u039aK \u039cM \u039dN \u039fO \u03a1P \u03a4T \u03a5Y \u03a7X ' +
  // Armenian; dotless i, script a and g
  '\u0585o \u057du \u0570h \u0578n \u0131i \u0251a \u0261g ' +
  // Small capitals
  '\u1d00a \u0299b \u1d04c \u1d05d \u1d07e \ua730f \u0262g \u029ch \u026ai \u1d0aj \u1d0bk \u029fl \u1d0dm ' +
  '\u0274n \u1d0fo \u1d18p \u0280r \ua731s \u1d1bt \u1d1cu \u1d20v \u1d21w \u028fy \u1d22z';

// Blocks whose letters Unicode itself maps to a plain letter (NFKC): modifier and super/subscript letters (ᵈᵒⁿᵉ),
// letterlike symbols (ℎ, ℯ, ℓ: the holes of the styled alphabets) and circled letters (ⓓⓞⓝⓔ). Only mappings to
// one letter are kept: "℡" (TEL) or "⒜" ("(a)") are symbols, not letters.
const COMPATIBLE_BLOCKS: readonly [number, number][] = [
  [0x02b0, 0x02ff],
  [0x1d00, 0x1dbf],
  [0x2070, 0x209f],
  [0x2100, 0x214f],
  [0x24b6, 0x24e9],
];

const LOOKALIKES = new Map<string, string>(
  LOOKALIKE_TABLE.split(' ').map((pair) => [pair.charAt(0), pair.charAt(1)] as const),
);
for (const [first, last] of COMPATIBLE_BLOCKS) {
  for (let code = first; code <= last; code++) {
    const c = String.fromCharCode(code);
    const plain = c.normalize('NFKC');
    if (plain !== c && /^[A-Za-z]$/.test(plain) && !LOOKALIKES.has(c)) LOOKALIKES.set(c, plain);
  }
}
// Fullwidth Latin letters (Ａ–Ｚ, ａ–ｚ) sit at a fixed distance from ASCII.
for (let code = 0xff21; code <= 0xff5a; code++) {
  if (code <= 0xff3a || code >= 0xff41)
    LOOKALIKES.set(String.fromCharCode(code), String.fromCharCode(code - 0xfee0));
}
const LOOKALIKE = new RegExp(`[${[...LOOKALIKES.keys()].join('')}]`, 'g');
const HAS_LOOKALIKE = new RegExp(LOOKALIKE.source);

/**
 * Writes letters that look like ASCII letters as those letters, one UTF-16 unit for one, so every offset into the
 * text stays valid: the guard judges the words a person reads.
 */
export function foldLookalikes(text: string): string {
  if (!HAS_LOOKALIKE.test(text)) return text;
  return text.replace(LOOKALIKE, (c) => LOOKALIKES.get(c) ?? c);
}

// The styled alphabets outside the BMP, each letter a surrogate pair: mathematical bold, italic, script, fraktur,
// double-struck, sans-serif and monospace (𝐝𝐨𝐧𝐞, 𝘥𝘰𝘯𝘦, 𝚍𝚘𝚗𝚎), and the squared and negative letters (🄳🄾🄽🄴, 🅳🅾🅽🅴).
const STYLED = /[\u{1d400}-\u{1d7ff}\u{1f130}-\u{1f149}\u{1f150}-\u{1f169}\u{1f170}-\u{1f189}]/gu;
const HAS_STYLED = new RegExp(STYLED.source, 'u');

/** The letter a styled code point stands for, or undefined when it is not one (a digit, an unassigned point). */
function styledLetter(c: string): string | undefined {
  const code = c.codePointAt(0)!;
  // Negative circled and negative squared capitals have no compatibility mapping; they run A to Z.
  if (code >= 0x1f150 && code <= 0x1f169) return String.fromCharCode(0x41 + code - 0x1f150);
  if (code >= 0x1f170) return String.fromCharCode(0x41 + code - 0x1f170);
  const plain = c.normalize('NFKC');
  // Styled Greek becomes Greek, which `foldLookalikes` then reads as the Latin letter it passes for (𝛂 → α → a).
  return plain !== c && plain.length === 1 && /\p{L}/u.test(plain) ? plain : undefined;
}

/** Text with styled letters written plainly, and where each of its offsets came from in the original. */
export interface FoldedText {
  text: string;
  /**
   * `origin[i]` is the offset in the original text of the folded text's offset `i` (its length included); absent
   * when nothing was folded, as then every offset is its own.
   */
  origin?: number[];
}

/**
 * Writes the styled letters outside the BMP (two UTF-16 units each) as the one-unit letters they show, keeping a
 * map back to the original offsets, so the words can be matched while the clauses keep the writer's characters.
 */
export function foldStyled(text: string): FoldedText {
  if (!HAS_STYLED.test(text)) return { text };
  let out = '';
  const origin: number[] = [];
  let from = 0;
  for (const m of text.matchAll(STYLED)) {
    const letter = styledLetter(m[0]);
    if (letter === undefined) continue;
    for (let i = from; i < m.index; i++) origin.push(i);
    out += text.slice(from, m.index) + letter;
    origin.push(m.index);
    from = m.index + m[0].length;
  }
  for (let i = from; i <= text.length; i++) origin.push(i);
  out += text.slice(from);
  return from === 0 ? { text } : { text: out, origin };
}

/** Every letter that prints as a Latin one written as that letter, for matching words where offsets do not matter. */
export function readAsLatin(text: string): string {
  return foldLookalikes(foldStyled(text).text);
}
