import {
  type CommonFaults,
  commonFaults,
  copy,
  type FakeOptions,
  FakeSystem,
  transportError,
} from './shared.js';

/** Where a message is: `queued` until its delivery delay passes, then one of the terminal states. */
export type MailStatus = 'queued' | 'delivered' | 'dropped' | 'bounced';

/** How an accepted message ends; `stuck` never leaves `queued`. */
export type MailOutcome = 'delivered' | 'dropped' | 'bounced' | 'stuck';

/** What the caller asks the provider to send; without an idempotency key there is no dedupe and no lookup. */
export interface MailRequest {
  to: string;
  subject: string;
  body: string;
  idempotencyKey?: string;
}

/** The provider's 202-style answer: accepted for delivery, nothing more. */
export interface MailAccepted {
  status: 'queued';
  messageId: string;
}

/** A message as the provider reports it, with its status computed from the clock at read time. */
export interface MailMessage {
  messageId: string;
  idempotencyKey: string | null;
  to: string;
  subject: string;
  body: string;
  status: MailStatus;
  enqueuedAt: number;
  updatedAt: number;
}

/** Faults of the mail provider, on top of the common ones (`readerDown`/`readerDenied`/`readerHangs` hit lookups). */
export interface MailFaults extends CommonFaults {
  /** One-shot: how the next newly accepted message ends (a deduplicated send does not consume it). */
  nextOutcome: MailOutcome | null;
}

/** Constructor options of {@link FakeMailProvider}. */
export interface FakeMailProviderOptions extends FakeOptions {
  /** How long a message stays queued before reaching its outcome, in ms (default 1000). */
  deliveryDelayMs?: number;
}

/** A saved provider queue, as `snapshot()` returns it. */
export interface MailSnapshot {
  version: 1;
  messages: StoredMessage[];
}

/** One accepted message with the outcome and time it will settle at. */
export interface StoredMessage {
  messageId: string;
  idempotencyKey: string | null;
  to: string;
  subject: string;
  body: string;
  outcome: MailOutcome;
  enqueuedAt: number;
  settlesAt: number;
}

/** A mail provider that accepts first and delivers later, with provider-side dedupe and injectable faults. */
export class FakeMailProvider extends FakeSystem<MailFaults> {
  /** Queue time of messages accepted from now on, in ms; already queued messages keep theirs. */
  deliveryDelayMs: number;
  private readonly stored: StoredMessage[] = [];
  private readonly byKey = new Map<string, StoredMessage>();
  private readonly byId = new Map<string, StoredMessage>();

  /** Creates an empty provider on the given clock. */
  constructor(options: FakeMailProviderOptions) {
    super('mail', options, { ...commonFaults(), nextOutcome: null });
    this.deliveryDelayMs = options.deliveryDelayMs ?? 1000;
  }

  /** The provider's accepted messages as plain data, so a later process can restore the same queue. */
  snapshot(): MailSnapshot {
    return { version: 1, messages: copy(this.stored) };
  }

  /** Loads messages saved by `snapshot()` into an empty provider; their delivery times are kept. */
  restore(snapshot: MailSnapshot): void {
    if (snapshot?.version !== 1 || !Array.isArray(snapshot.messages)) {
      throw new Error('not a mail snapshot (expected { version: 1, messages: [...] })');
    }
    if (this.stored.length > 0) throw new Error('restore() needs an empty provider');
    for (const message of copy(snapshot.messages)) {
      this.stored.push(message);
      this.byId.set(message.messageId, message);
      if (message.idempotencyKey !== null) this.byKey.set(message.idempotencyKey, message);
    }
  }

  /** Every message the provider accepted, in order, with its status as of now (the effect log). */
  get messages(): readonly MailMessage[] {
    return this.stored.map((m) => this.view(m));
  }

  /** Accepts a message for delivery; a repeated idempotency key returns the first message's id and sends nothing new. */
  async send(request: MailRequest): Promise<MailAccepted> {
    const call = this.record('send', [request]);
    if (this.take(call, 'failNextWrite')) throw transportError(this.where(call));
    const key = request.idempotencyKey ?? null;
    let message = key === null ? undefined : this.byKey.get(key);
    if (!message) {
      const outcome = this.faults.nextOutcome ?? 'delivered';
      if (this.faults.nextOutcome !== null) {
        this.faults.nextOutcome = null;
        this.fired(call, `nextOutcome:${outcome}`);
      }
      const now = this.clock.now();
      message = {
        messageId: `msg-${String(this.stored.length + 1).padStart(4, '0')}`,
        idempotencyKey: key,
        to: request.to,
        subject: request.subject,
        body: request.body,
        outcome,
        enqueuedAt: now,
        settlesAt: now + this.deliveryDelayMs,
      };
      this.stored.push(message);
      this.byId.set(message.messageId, message);
      if (key !== null) this.byKey.set(key, message);
    }
    if (this.take(call, 'loseNextResponse')) throw transportError(this.where(call));
    return { status: 'queued', messageId: message.messageId };
  }

  /** Finds the message sent with this idempotency key (the provider's status API), or null. */
  async lookup(idempotencyKey: string): Promise<MailMessage | null> {
    const call = this.record('lookup', [idempotencyKey]);
    await this.readGate(call);
    const message = this.byKey.get(idempotencyKey);
    return message ? this.view(message) : null;
  }

  /** Reads one message by provider id, or null. */
  async getMessage(messageId: string): Promise<MailMessage | null> {
    const call = this.record('getMessage', [messageId]);
    await this.readGate(call);
    const message = this.byId.get(messageId);
    return message ? this.view(message) : null;
  }

  /** Messages delivered to `to` as of now: the real effect, unaffected by faults and not recorded as a call. */
  inbox(to: string): MailMessage[] {
    return this.messages.filter((m) => m.to === to && m.status === 'delivered');
  }

  // Status is derived from the clock on every read, so no timers are needed and time can jump.
  private view(message: StoredMessage): MailMessage {
    const settled = this.clock.now() >= message.settlesAt && message.outcome !== 'stuck';
    return copy({
      messageId: message.messageId,
      idempotencyKey: message.idempotencyKey,
      to: message.to,
      subject: message.subject,
      body: message.body,
      status: settled ? (message.outcome as MailStatus) : 'queued',
      enqueuedAt: message.enqueuedAt,
      updatedAt: settled ? message.settlesAt : message.enqueuedAt,
    });
  }
}
