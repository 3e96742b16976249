import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { AnyAction } from '../contract/types.js';
import { FakeClock } from '../testing/fakes/fake-clock.js';
import type { MailSnapshot } from '../testing/fakes/mail.js';
import { createHelpdesk, type Helpdesk } from '../testing/helpdesk.js';

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
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as MailSnapshot;
    return saved?.version === 1 && Array.isArray(saved.messages) ? saved : undefined;
  } catch {
    return undefined;
  }
}

/** True when `storePath` is a store the demo wrote (its saved state lies beside it), so the CLI can supply its actions. */
export function isDemoStore(storePath: string): boolean {
  return existsSync(mailFile(storePath));
}

/**
 * The demo's actions for `readback reconcile`: the helpdesk contracts over fakes restored from the state the
 * demo saved, on a clock set to now (the demo's own timeline ran in the recent past).
 */
export function demoActions(storePath: string): AnyAction[] {
  const hd = createHelpdesk({ clock: new FakeClock(Date.now()) });
  const file = mailFile(storePath);
  if (existsSync(file)) hd.mail.restore(JSON.parse(readFileSync(file, 'utf8')) as MailSnapshot);
  return Object.values(hd.actions);
}
