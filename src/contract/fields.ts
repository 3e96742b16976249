// Closed option shapes: a misspelt optional field would otherwise be dropped in silence, its check or its
// setting switched off (`scopeof`, `verifyTimeoutMS`, `stor`).

/** The first own field of `value` not in `known`, with the known field it most likely misspells, if any. */
export function unknownField(
  value: object,
  known: readonly string[],
): { key: string; hint: string } | undefined {
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue;
    const near = known.find(
      (k) =>
        k.toLowerCase() === key.toLowerCase() ||
        editDistance(k, key) <= 2 ||
        // A cut-short name: "redact" for "redaction".
        (key.length >= 4 && k.startsWith(key)),
    );
    return { key, hint: near ? `; did you mean "${near}"?` : '' };
  }
  return undefined;
}

// Levenshtein distance, for the suggestions on short field names.
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}
