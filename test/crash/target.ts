// The durable fake target the crash tests run against: its own SQLite file, shared by the test process
// and every child, holding the provider's state and two append-only logs — every effect applied
// (`effects`) and every authoritative read served (`reads`). The checker compares them with the store.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { loadBetterSqlite3, type SqliteLike } from '../../src/sqlite/driver.js';

/** One call that reached the provider and changed (or, deduplicated, would have changed) its state. */
export interface Effect {
  seq: number;
  kind: 'ledger' | 'bump' | 'job';
  key: string;
  /** 1 when the call changed state; 0 when the provider deduplicated it on the idempotency key. */
  applied: number;
  attempt: number;
  at: number;
  pid: number;
}

/** One authoritative read the provider served. */
export interface Read {
  kind: string;
  key: string;
  at: number;
  pid: number;
}

export type JobState = 'running' | 'succeeded' | 'failed';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS effects (seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, key TEXT NOT NULL,
  applied INTEGER NOT NULL, attempt INTEGER NOT NULL, at INTEGER NOT NULL, pid INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS reads (seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, key TEXT NOT NULL,
  at INTEGER NOT NULL, pid INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS ledger (key TEXT PRIMARY KEY, amount INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (key TEXT PRIMARY KEY, complete_at INTEGER NOT NULL, outcome TEXT NOT NULL,
  state TEXT NOT NULL);
`;

/** The fake provider over one target file. */
export class Target {
  private constructor(private readonly db: SqliteLike) {}

  static async open(path: string): Promise<Target> {
    const Database = await loadBetterSqlite3();
    mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    db.exec('PRAGMA journal_mode = WAL');
    // A SIGKILL loses nothing a committed WAL frame holds; only power loss would need FULL.
    db.exec('PRAGMA synchronous = NORMAL');
    db.exec('PRAGMA busy_timeout = 10000');
    db.exec(SCHEMA);
    return new Target(db);
  }

  /** Every write is one immediate transaction, so an effect and its log row commit together. */
  private tx<T>(fn: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = fn();
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      this.db.exec('ROLLBACK');
      throw error;
    }
  }

  private log(kind: Effect['kind'], key: string, applied: boolean, attempt: number): void {
    this.db
      .prepare('INSERT INTO effects (kind, key, applied, attempt, at, pid) VALUES (?, ?, ?, ?, ?, ?)')
      .run(kind, key, applied ? 1 : 0, attempt, Date.now(), process.pid);
  }

  private read(kind: string, key: string): void {
    this.db
      .prepare('INSERT INTO reads (kind, key, at, pid) VALUES (?, ?, ?, ?)')
      .run(kind, key, Date.now(), process.pid);
  }

  /** Safe to repeat: the ledger deduplicates on the idempotency key, as a payments provider does. */
  ledgerPost(key: string, amount: number, attempt: number): void {
    this.tx(() => {
      const { changes } = this.db
        .prepare('INSERT INTO ledger (key, amount) VALUES (?, ?) ON CONFLICT (key) DO NOTHING')
        .run(key, amount);
      this.log('ledger', key, Number(changes) === 1, attempt);
    });
  }

  ledgerRead(key: string): { amount: number } | null {
    return this.tx(() => {
      this.read('ledger', key);
      const row = this.db.prepare('SELECT amount FROM ledger WHERE key = ?').get(key) as
        | { amount: number }
        | undefined;
      return row ? { amount: row.amount } : null;
    });
  }

  /** Not safe to repeat: a plain increment with no dedupe, so a second application shows as 2. */
  bump(key: string, attempt: number): void {
    this.tx(() => {
      this.db
        .prepare(
          'INSERT INTO counters (key, value) VALUES (?, 1) ON CONFLICT (key) DO UPDATE SET value = value + 1',
        )
        .run(key);
      this.log('bump', key, true, attempt);
    });
  }

  counterRead(key: string): { value: number } | null {
    return this.tx(() => {
      this.read('bump', key);
      const row = this.db.prepare('SELECT value FROM counters WHERE key = ?').get(key) as
        | { value: number }
        | undefined;
      return row ? { value: row.value } : null;
    });
  }

  /** Accepted mode: enqueues a job (deduplicated on the key) that the provider finishes `durationMs` later. */
  enqueue(key: string, durationMs: number, outcome: 'succeeded' | 'failed', attempt: number): void {
    this.tx(() => {
      const { changes } = this.db
        .prepare(
          `INSERT INTO jobs (key, complete_at, outcome, state) VALUES (?, ?, ?, 'running') ON CONFLICT (key) DO NOTHING`,
        )
        .run(key, Date.now() + durationMs, outcome);
      this.log('job', key, Number(changes) === 1, attempt);
    });
  }

  /** The provider's view of a job; work whose time has come is finished first, as its worker would have. */
  jobRead(key: string): { state: JobState } | null {
    return this.tx(() => {
      this.read('job', key);
      this.db
        .prepare(`UPDATE jobs SET state = outcome WHERE key = ? AND state = 'running' AND complete_at <= ?`)
        .run(key, Date.now());
      const row = this.db.prepare('SELECT state FROM jobs WHERE key = ?').get(key) as
        | { state: JobState }
        | undefined;
      return row ? { state: row.state } : null;
    });
  }

  effects(): Effect[] {
    return this.db.prepare('SELECT * FROM effects ORDER BY seq').all() as Effect[];
  }

  reads(): Read[] {
    return this.db.prepare('SELECT kind, key, at, pid FROM reads ORDER BY seq').all() as Read[];
  }

  counter(key: string): number {
    const row = this.db.prepare('SELECT value FROM counters WHERE key = ?').get(key) as
      | { value: number }
      | undefined;
    return row?.value ?? 0;
  }

  close(): void {
    this.db.close();
  }
}
