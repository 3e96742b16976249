import {
  type CommonFaults,
  commonFaults,
  copy,
  type FakeOptions,
  FakeSystem,
  transportError,
} from './shared.js';

/** A record in the migration target; `migratedAt` is null until a migration really touched it. */
export interface BatchRecord {
  id: string;
  value: string;
  schemaVersion: number;
  migratedAt: number | null;
}

/** One record migration that really happened (the effect log). */
export interface BatchMigration {
  id: string;
  fromVersion: number;
  toVersion: number;
  at: number;
}

/** Faults of the batch target, on top of the common ones. */
export interface BatchFaults extends CommonFaults {
  /** Persistent: ids that every migration silently skips while still counting them as accepted. */
  failIds: Set<string>;
}

/** A migration target whose bulk endpoint always claims full success, whatever it really did. */
export class FakeBatchTarget extends FakeSystem<BatchFaults> {
  private readonly records = new Map<string, BatchRecord>();
  private readonly applied: BatchMigration[] = [];

  /** Creates an empty target on the given clock. */
  constructor(options: FakeOptions) {
    super('batch', options, { ...commonFaults(), failIds: new Set<string>() });
  }

  /** Record migrations that really happened, in order. */
  get migrations(): readonly BatchMigration[] {
    return copy(this.applied);
  }

  /** Creates `n` records `rec-001`…, at schema version 1 and never migrated; returns their ids. */
  seed(n: number): string[] {
    const ids: string[] = [];
    for (let i = 1; i <= n; i++) {
      const suffix = String(i).padStart(3, '0');
      const id = `rec-${suffix}`;
      this.records.set(id, { id, value: `value-${suffix}`, schemaVersion: 1, migratedAt: null });
      ids.push(id);
    }
    return ids;
  }

  /**
   * Migrates the records to `toVersion` and answers `accepted: ids.length` regardless: ids in
   * `faults.failIds` and unknown ids are skipped without a word, like many real bulk endpoints.
   */
  async migrate(ids: string[], options: { toVersion: number }): Promise<{ ok: true; accepted: number }> {
    const call = this.record('migrate', [ids, options]);
    if (this.take(call, 'failNextWrite')) throw transportError(this.where(call));
    const at = this.clock.now();
    for (const id of ids) {
      const record = this.records.get(id);
      if (!record || record.schemaVersion === options.toVersion) continue;
      if (this.faults.failIds.has(id)) {
        this.fired(call, `failIds:${id}`);
        continue;
      }
      this.applied.push({ id, fromVersion: record.schemaVersion, toVersion: options.toVersion, at });
      record.schemaVersion = options.toVersion;
      record.migratedAt = at;
    }
    if (this.take(call, 'loseNextResponse')) throw transportError(this.where(call));
    return { ok: true, accepted: ids.length };
  }

  /** Reads the records in the order asked, with null for ids that do not exist. */
  async readMany(ids: string[]): Promise<(BatchRecord | null)[]> {
    const call = this.record('readMany', [ids]);
    await this.readGate(call);
    return ids.map((id) => {
      const record = this.records.get(id);
      return record ? copy(record) : null;
    });
  }
}
