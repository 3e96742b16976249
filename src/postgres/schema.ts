import { ReadbackError } from '../errors.js';
import type { PgQueryable } from './driver.js';
import { type Tables, tablesIn } from './sql.js';

/** One step of the database schema: statements applied once, in order, in the migration's transaction. */
export interface Migration {
  version: number;
  name: string;
  statements: (t: Tables) => string[];
  /** The indexes it adds to tables that may already be large (see `buildIndex`). */
  indexes?: IndexBuild[];
  /** What its indexes need that an operator may add ahead of it: quick, idempotent statements. */
  ahead?: (t: Tables) => string[];
}

/** An index a migration adds to an existing table: its name, and what follows `CREATE [UNIQUE] INDEX name ON`. */
export interface IndexBuild {
  name: string;
  unique: boolean;
  on: (t: Tables) => string;
}

const WRITE_ID_INDEX: IndexBuild = {
  name: 'events_write_id',
  unique: true,
  on: (t) => `${t.events} (operation_id, write_id) WHERE write_id IS NOT NULL`,
};

const DUE_BY_ACTION_INDEX: IndexBuild = {
  name: 'operations_due_by_action',
  unique: false,
  on: (t) => `${t.operations} (action, next_poll_at, requested_at, id)`,
};

/** The schema, oldest first. Never edit a released step; add a new one. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'operations and events',
    statements: (t) => [
      // JSON columns are jsonb (SQL NULL stands for JSON null); times are bigint milliseconds.
      // ids and keys use the "C" collation so ORDER BY id matches the memory store's code-unit order.
      `CREATE TABLE ${t.operations} (
        id text COLLATE "C" PRIMARY KEY,
        schema_version integer NOT NULL,
        action text NOT NULL,
        target text NOT NULL,
        scope jsonb NOT NULL,
        fingerprint text NOT NULL,
        idempotency_key text COLLATE "C" NOT NULL,
        run_id text NOT NULL,
        actor text,
        input jsonb,
        attempt integer NOT NULL,
        lifecycle text NOT NULL,
        status text,
        requested_at bigint NOT NULL,
        updated_at bigint NOT NULL,
        executed_at bigint,
        in_flight_until bigint,
        accepted_at bigint,
        last_observed_at bigint,
        next_poll_at bigint,
        reads integer NOT NULL,
        provider_ref jsonb,
        baseline jsonb,
        completion jsonb,
        lease_owner text,
        lease_token text,
        lease_expires_at bigint,
        -- The seq of the operation's last event: bumped by the UPDATE that appends the next one, so
        -- the row lock that UPDATE takes is what makes seq assignment atomic across processes.
        event_seq integer NOT NULL DEFAULT 0
      )`,
      // The idempotency constraint is what makes reserve exactly-once across connections and processes.
      `ALTER TABLE ${t.operations} ADD CONSTRAINT operations_idempotency_key UNIQUE (idempotency_key)`,
      `CREATE INDEX operations_status ON ${t.operations} (status)`,
      // claimDue and list({ dueBefore }) walk open lifecycles in next_poll_at order.
      `CREATE INDEX operations_due ON ${t.operations} (next_poll_at, requested_at, id) WHERE lifecycle NOT IN ('settled', 'awaiting_approval')`,
      `CREATE INDEX operations_action ON ${t.operations} (action)`,
      `CREATE INDEX operations_run_id ON ${t.operations} (run_id)`,
      `CREATE INDEX operations_requested ON ${t.operations} (requested_at, id)`,
      // No FOREIGN KEY: its check would take a KEY SHARE lock on the operation row (making claimers skip
      // it) and cost a lookup per event; the store only appends an event in the statement that wrote its operation.
      `CREATE TABLE ${t.events} (
        operation_id text COLLATE "C" NOT NULL,
        seq integer NOT NULL,
        schema_version integer NOT NULL,
        at bigint NOT NULL,
        type text NOT NULL,
        from_lifecycle text,
        to_lifecycle text,
        status text,
        actor text,
        attempt integer NOT NULL,
        detail jsonb,
        PRIMARY KEY (operation_id, seq)
      )`,
    ],
  },
  {
    version: 2,
    name: 'write ids on events',
    indexes: [WRITE_ID_INDEX],
    // The index needs the column; adding a nullable column only changes the catalog, so it may go first too.
    ahead: (t) => [`ALTER TABLE ${t.events} ADD COLUMN IF NOT EXISTS write_id text`],
    statements: (t) => [
      // The id of the store call that appended the event. A write whose connection died before its
      // COMMIT was acknowledged is looked up by it instead of being applied a second time, and the
      // unique index makes a second apply of the same call fail even if the first commits late.
      `ALTER TABLE ${t.events} ADD COLUMN IF NOT EXISTS write_id text`,
      ...buildIndex(t, WRITE_ID_INDEX),
    ],
  },
  {
    version: 3,
    name: 'due operations by action',
    indexes: [DUE_BY_ACTION_INDEX],
    statements: (t) => [
      // A claim naming the actions a reconciler knows walks each of them here (claimDueByActionSql), rather than
      // every service's due operations in time order on operations_due. Not partial, and the one index led by
      // action: with operations_action beside it, or a lifecycle predicate, planners without statistics read
      // every row of the action and sorted them instead of walking in order.
      ...buildIndex(t, DUE_BY_ACTION_INDEX),
      `DROP INDEX IF EXISTS ${t.schema}.operations_action`,
    ],
  },
];

/**
 * The statements of a migration step that adds an index to a table that may already hold many rows. Inside the
 * migration's transaction the build holds writes to the table for as long as it takes, so an operator may build
 * it beforehand without holding them (`preMigrationStatements`): the step then finds it and builds nothing.
 * A concurrent build that failed or was cancelled leaves the index invalid (no plan uses it): the step drops it
 * and builds it afresh rather than take it for done.
 */
function buildIndex(t: Tables, index: IndexBuild): string[] {
  // Tables holds the schema quoted; the catalog holds it bare.
  const schemaName = t.schema.slice(1, -1);
  return [
    `IF EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ${literal(schemaName)} AND c.relname = ${literal(index.name)} AND NOT i.indisvalid) THEN
        DROP INDEX ${t.schema}.${index.name};
      END IF`,
    `CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${index.name} ON ${index.on(t)}`,
  ];
}

/**
 * What an operator may run ahead of the migrations after `fromVersion`, one statement at a time and outside a
 * transaction, before a new readback first opens a large schema: each index is built without holding writes
 * (with what it needs first), and the migration then finds it built. A build that fails leaves an invalid index,
 * which the migration replaces.
 */
export function preMigrationStatements(schema: string, fromVersion: number): string[] {
  requireSchemaName(schema);
  const t = tablesIn(schema);
  return MIGRATIONS.filter((step) => step.version > fromVersion).flatMap((step) => [
    ...(step.ahead?.(t) ?? []),
    ...(step.indexes ?? []).map(
      (index) =>
        `CREATE ${index.unique ? 'UNIQUE ' : ''}INDEX CONCURRENTLY IF NOT EXISTS ${index.name} ON ${index.on(t)}`,
    ),
  ]);
}

/** The database schema version this code writes; a schema with a newer one is refused rather than misread. */
export const POSTGRES_SCHEMA_VERSION = MIGRATIONS.at(-1)!.version;

/** Schema names readback accepts: plain lower-case identifiers, so they need no escaping beyond quotes. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Refuses a schema name that is not a plain identifier. */
export function requireSchemaName(schema: unknown): asserts schema is string {
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema)) {
    throw new ReadbackError(
      'invalid_options',
      'must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 characters)',
      'schema',
    );
  }
}

// Where the migration keeps the connection's statement timeout while it runs without one.
const SAVED_TIMEOUT = 'readback.statement_timeout';

/**
 * Builds the migration as one query text of three statements, which pg sends as one simple query, so they run
 * on one connection in one (implicit) transaction on any queryable (a pool hands each query to whichever
 * connection is free); the last is a DO block. It first takes a transaction-scoped advisory lock keyed on the schema name: processes starting at once
 * queue there, and each re-reads the version after the lock, so the later ones find nothing left to do.
 * A failing step rolls the whole transaction back, leaving the previous schema intact.
 *
 * The statement timeout of the connection (30 s on pools readback opens) is lifted for the migration: an index
 * build on a large table may outlast it, and so may the wait of a second process for the first's migration.
 * The server arms that timeout when a statement starts, so it is turned off by a statement before the DO block;
 * `SET LOCAL` ends with the transaction, and every later statement on the connection has it again. What the
 * timeout used to bound besides (a step waiting for a table lock that another session holds, which queues
 * every store statement on that table behind it) stays bounded: unless the session sets its own
 * `lock_timeout`, each lock wait after the advisory lock gets the statement timeout as its limit.
 */
export function migrationSql(schema: string): string {
  const t = tablesIn(schema);
  const steps = MIGRATIONS.map(
    (step) => `
    IF current < ${step.version} THEN
      ${step
        .statements(t)
        .map((s) => `${s};`)
        .join('\n      ')}
      INSERT INTO ${t.migrations} (version, name, applied_at)
        VALUES (${step.version}, ${literal(step.name)}, (extract(epoch from clock_timestamp()) * 1000)::bigint);
    END IF;`,
  ).join('');
  // The first statement keeps the connection's statement timeout for the DO block (a custom setting, local
  // to the transaction), which takes it as its lock timeout once it holds the advisory lock.
  return `SELECT set_config('${SAVED_TIMEOUT}', current_setting('statement_timeout'), true);
  SET LOCAL statement_timeout = 0;
  DO $readback_migrate$
  DECLARE current integer;
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(${literal(`readback.migrate:${schema}`)}, 0));
    IF current_setting('lock_timeout') = '0' THEN
      PERFORM set_config('lock_timeout', current_setting('${SAVED_TIMEOUT}'), true);
    END IF;
    CREATE SCHEMA IF NOT EXISTS ${t.schema};
    CREATE TABLE IF NOT EXISTS ${t.migrations} (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at bigint NOT NULL
    );
    SELECT COALESCE(MAX(version), 0) INTO current FROM ${t.migrations};
    -- migrate() refused a newer schema before the lock; a newer readback may have migrated it since.
    IF current > ${POSTGRES_SCHEMA_VERSION} THEN
      RAISE EXCEPTION 'schema % has readback schema v%, newer than this readback (v${POSTGRES_SCHEMA_VERSION}); upgrade readback to open it',
        ${literal(schema)}, current USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    ${steps}
  END
  $readback_migrate$`;
}

/** Brings `schema` up to date, or refuses a schema written by a newer readback. */
export async function migrate(db: PgQueryable, schema: string): Promise<void> {
  const t = tablesIn(schema);
  // Refuse a newer schema before touching it: reading first means an unknown version is never migrated.
  const found = await db.query(`SELECT to_regclass($1) IS NOT NULL AS found`, [`${t.schema}.migrations`]);
  if ((found.rows[0] as { found: boolean }).found) {
    const { rows } = await db.query(`SELECT COALESCE(MAX(version), 0)::int AS version FROM ${t.migrations}`);
    const version = (rows[0] as { version: number }).version;
    if (version > POSTGRES_SCHEMA_VERSION) {
      throw new ReadbackError(
        'store_conflict',
        `schema ${schema} has readback schema v${version}, newer than this readback (v${POSTGRES_SCHEMA_VERSION}); upgrade readback to open it`,
      );
    }
    if (version === POSTGRES_SCHEMA_VERSION) return;
  }
  try {
    await db.query(migrationSql(schema));
  } catch (error) {
    // The migration's own refusal of a schema a newer readback migrated since the check above.
    const e = error as { code?: unknown; message?: unknown };
    if (
      e.code === '55000' &&
      typeof e.message === 'string' &&
      e.message.includes('newer than this readback')
    ) {
      throw new ReadbackError('store_conflict', e.message);
    }
    throw error;
  }
}

function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
