import { columnNode, columnTrie } from '../store/column-trie.js';
import { type Tables, transitionBatchSql, transitionSql } from './sql.js';

// Shapes are bounded by the code paths that write, but a caller's odd patches must not grow the cache forever.
const MAX_SHAPES = 256;

/** One transition shape (columns and guards) with its statement texts; the batch text is built on first use. */
export interface TransitionShape {
  /** Equal for transitions that may share a batched statement. */
  key: string;
  text: string;
  batchText: () => string;
}

/**
 * Finds a transition's shape for one schema's tables. A transition's texts depend only on its columns and
 * guards, and the same few shapes repeat on every action: each is built once (and so hashed once for its
 * statement name), and found again through a trie keyed by the column names (constants, whose hashes are
 * cached) instead of a key string built per write.
 */
export function transitionShapes(tables: Tables) {
  let shapes = columnTrie<TransitionShape>();
  let count = 0;
  return (columns: string[], leaseToken: boolean, attempt: boolean, status = false): TransitionShape => {
    const node = columnNode(shapes, columns);
    const guards = (leaseToken ? 1 : 0) + (attempt ? 2 : 0) + (status ? 4 : 0);
    let shape = node.values[guards];
    if (shape === undefined) {
      if (++count > MAX_SHAPES) {
        shapes = columnTrie();
        count = 0;
      }
      const guard = { leaseToken, attempt, status };
      let batchText: string | undefined;
      shape = {
        key: `${columns.join(',')}|${guards}`,
        text: transitionSql(tables, columns, guard),
        batchText: () => {
          batchText ??= transitionBatchSql(tables, columns, guard);
          return batchText;
        },
      };
      node.values[guards] = shape;
    }
    return shape;
  };
}
