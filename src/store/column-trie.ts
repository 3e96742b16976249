/** A trie of column lists: one node per list prefix, each holding values by a small integer key. */
export interface ColumnTrie<V> {
  next: Map<string, ColumnTrie<V>>;
  values: (V | undefined)[];
}

/** An empty trie. */
export function columnTrie<V>(): ColumnTrie<V> {
  return { next: new Map(), values: [] };
}

/**
 * The node for `columns` under `root`, made on the way. Column names are constants, whose hashes V8
 * keeps, so this walk costs less than building and hashing a key string on every write.
 */
export function columnNode<V>(root: ColumnTrie<V>, columns: readonly string[]): ColumnTrie<V> {
  let node = root;
  for (const column of columns) {
    let child = node.next.get(column);
    if (child === undefined) {
      child = columnTrie<V>();
      node.next.set(column, child);
    }
    node = child;
  }
  return node;
}
