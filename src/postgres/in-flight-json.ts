import { type BoundJson, decodeBound, type JsonTexts } from '../sqlite/rows.js';

// Writes whose JSON texts wait to be decoded on the next macrotask, and whether one is scheduled for them.
let waiting: InFlightJson[] = [];
let scheduled = false;

const decodeWaiting = () => {
  const now = waiting;
  waiting = [];
  scheduled = false;
  for (const json of now) json.get();
};

/**
 * The JSON texts a write binds, decoded for the record it returns while its statement is on the wire:
 * `soon()` (called once the statement is sent) decodes them on the next macrotask, when the event loop would
 * otherwise sit idle waiting for the server; `get()` decodes at once if the answer came first. Decoding the
 * row's own copy after the answer would put that work between the answer and the caller.
 */
export class InFlightJson {
  private decoded: BoundJson | undefined;

  constructor(private readonly texts: JsonTexts) {}

  /** The decoded fields (decoding them now if that has not happened yet). */
  get(): BoundJson {
    this.decoded ??= decodeBound(this.texts);
    return this.decoded;
  }

  /** Queues the decoding for the next macrotask; one `setImmediate` serves every write of a turn. */
  soon(): void {
    waiting.push(this);
    if (!scheduled) {
      scheduled = true;
      setImmediate(decodeWaiting);
    }
  }
}
