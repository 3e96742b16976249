// The stand-in SQLite handle the JavaScript-only benches share (`bench/paired.js`, `bench/sqlite-interference.js`).

/**
 * A SqliteLike whose writes land in a Map: the store's own code runs as on a file, its SQL costs nothing. `real` (an
 * in-memory better-sqlite3 database the store has migrated) answers every other statement; `clear` forgets the rows.
 */
export function standInHandle(columns, real) {
  const rows = new Map();
  const db = {
    prepare(sql) {
      if (/^\s*INSERT INTO readback_operations/.test(sql)) {
        return {
          run: (...p) => {
            rows.set(p[0], Object.fromEntries(columns.map((c, i) => [c, p[i]])));
            return { changes: 1 };
          },
        };
      }
      if (/^\s*UPDATE readback_operations/.test(sql)) {
        const set = [...sql.matchAll(/(\w+) = \?/g)].map((m) => m[1]);
        let arrays = false;
        return {
          // As better-sqlite3's raw mode: the row as an array of its values in column order.
          raw: (toggle = true) => {
            arrays = toggle;
          },
          get: (...p) => {
            const id = p[set.length - 1];
            const row = { ...rows.get(id) };
            set.forEach((c, i) => {
              if (c !== 'id') row[c] = p[i];
            });
            rows.set(id, row);
            return arrays ? columns.map((c) => row[c]) : row;
          },
        };
      }
      if (/^\s*INSERT INTO readback_events/.test(sql)) return { run: () => ({ changes: 1 }) };
      if (/^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)/.test(sql.trim())) {
        // As better-sqlite3's inTransaction: true from BEGIN until COMMIT or ROLLBACK (not ROLLBACK TO).
        const opens = /^BEGIN/.test(sql.trim());
        const ends = /^(COMMIT|ROLLBACK)\s*$/.test(sql.trim());
        return {
          run: () => {
            if (opens) db.inTransaction = true;
            else if (ends) db.inTransaction = false;
            return { changes: 0 };
          },
        };
      }
      return real.prepare(sql);
    },
    exec: (sql) => real.exec(sql),
    close() {},
    inTransaction: false,
  };
  return { db, clear: () => rows.clear() };
}
