import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { AnyAction } from '../contract/types.js';
import { FakeClock } from '../testing/fakes/fake-clock.js';
import type { MailSnapshot, StoredMessage } from '../testing/fakes/mail.js';
import { createHelpdesk, type Helpdesk } from '../testing/helpdesk.js';
import { CommandError, printable } from './format.js';

// The demo's fake systems live in its process; the mail queue is saved beside the store so that a later
// `readback reconcile` can look up the demo's pending email in the same provider state.
function mailFile(storePath: string): string {
  return `${resolve(storePath)}.demo-mail.json`;
}

/** Saves the demo's mail provider queue next to its store. */
export function saveDemoState(storePath: string, hd: Helpdesk): void {
  const file = mailFile(storePath);
  // Written aside and renamed, so a demo stopped mid-write never leaves a torn queue for reconcile to choke on.
  const aside = `${file}.${process.pid}.tmp`;
  writeFileSync(aside, `${JSON.stringify(hd.mail.snapshot())}\n`);
  renameSync(aside, file);
}

/**
 * The mail queue an earlier demo saved beside the store, or undefined when there is none (or it is not one).
 * A new demo run starts from it, so the emails an earlier run left pending can still be looked up.
 */
export function loadDemoState(storePath: string): MailSnapshot | undefined {
  const file = mailFile(storePath);
  if (!existsSync(file)) return undefined;
  const read = readSnapshot(file);
  return typeof read === 'string' ? undefined : read;
}

/** True when `storePath` is a store the demo wrote (its saved state lies beside it), so the CLI can supply its actions. */
export function isDemoStore(storePath: string): boolean {
  return existsSync(mailFile(storePath));
}

/**
 * The demo's actions for `readback reconcile`: the helpdesk contracts over fakes restored from the state the
 * demo saved, on a clock set to now (the demo's own timeline ran in the recent past). A saved state that
 * cannot be read is a `CommandError` naming the file and what is wrong with it.
 */
export function demoActions(storePath: string): AnyAction[] {
  const hd = createHelpdesk({ clock: new FakeClock(Date.now()) });
  const file = mailFile(storePath);
  if (existsSync(file)) {
    const read = readSnapshot(file);
    // Reconciling without the saved queue would call the demo's pending emails unknown: refuse instead.
    if (typeof read === 'string') {
      throw new CommandError(`demo state ${file} ${read}; repair or remove it, or pass --actions <module>`);
    }
    hd.mail.restore(read);
  }
  return Object.values(hd.actions);
}

// The saved queue, or what is wrong with the file: every message is checked, since restore() keys them by id.
function readSnapshot(file: string): MailSnapshot | string {
  let saved: unknown;
  try {
    saved = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    return `could not be read as JSON (${printable(error instanceof Error ? error.message : String(error))})`;
  }
  const snapshot = saved as Partial<MailSnapshot> | null;
  if (typeof snapshot !== 'object' || snapshot === null || snapshot.version !== 1) {
    return 'is not a saved mail queue (expected {"version":1,"messages":[...]})';
  }
  if (!Array.isArray(snapshot.messages)) return "is not a saved mail queue ('messages' is not a list)";
  const bad = snapshot.messages.findIndex(
    (m: Partial<StoredMessage> | null) =>
      typeof m !== 'object' ||
      m === null ||
      typeof m.messageId !== 'string' ||
      (m.idempotencyKey !== null && typeof m.idempotencyKey !== 'string'),
  );
  if (bad !== -1)
    return `is not a saved mail queue (message ${bad} has no string messageId or idempotencyKey)`;
  return snapshot as MailSnapshot;
}
