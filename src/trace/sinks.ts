import { createWriteStream, type WriteStream } from 'node:fs';
import { ReadbackError } from '../errors.js';
import type { TraceEvent, TraceSink } from './events.js';

/** A sink that hands every event to a function (already redacted; do not mutate it). */
export function callbackSink(onEvent: (event: TraceEvent) => void | Promise<void>): TraceSink {
  if (typeof onEvent !== 'function') {
    throw new ReadbackError('invalid_options', 'expected a function', 'callbackSink(onEvent)');
  }
  return { write: onEvent };
}

/** Options of `jsonlSink`. */
export interface JsonlSinkOptions {
  /** Append to an existing file (default) or truncate it first. */
  append?: boolean;
}

/** A JSONL sink: one event per line, written in batches through a stream; call `close()` when done. */
export interface JsonlSink extends TraceSink {
  readonly path: string;
  flush(): Promise<void>;
  close(): Promise<void>;
}

// Lines are gathered and handed to the stream in batches: each stream write is a file-system request through
// libuv's thread pool, costing far more than the JSON encoding. A batch goes out when it grows past
// BATCH_BYTES or BATCH_MS after its first line, whichever comes first (`flush()` and `close()` send it at once).
const BATCH_BYTES = 64 * 1024;
const BATCH_MS = 50;

/**
 * Writes each event as one JSON line to `path`. Writes are batched (at most 50 ms or 64 KiB) and asynchronous so
 * a run never waits on the disk; `flush()` resolves once every line so far reached the file, `close()` also
 * ends the stream.
 */
export function jsonlSink(path: string, options: JsonlSinkOptions = {}): JsonlSink {
  if (typeof path !== 'string' || path === '') {
    throw new ReadbackError('invalid_options', 'must be a non-empty file path', 'jsonlSink(path)');
  }
  const stream: WriteStream = createWriteStream(path, { flags: options.append === false ? 'w' : 'a' });
  let failure: unknown;
  let closed = false;
  let batch = '';
  let scheduled: ReturnType<typeof setTimeout> | undefined;
  stream.on('error', (error) => {
    failure = error;
  });
  const sendBatch = () => {
    if (scheduled) clearTimeout(scheduled);
    scheduled = undefined;
    if (batch === '' || failure) return;
    stream.write(batch);
    batch = '';
  };
  const drained = () =>
    new Promise<void>((resolve, reject) => {
      sendBatch();
      if (failure) return reject(failure);
      // An empty write's callback runs after everything queued before it has been handed to the file.
      stream.write('', (error) => (error || failure ? reject(error ?? failure) : resolve()));
    });
  return {
    path,
    write(event) {
      if (failure) throw failure;
      if (closed) throw new ReadbackError('invalid_options', 'the JSONL sink is closed', 'jsonlSink');
      batch += `${JSON.stringify(event)}\n`;
      if (batch.length >= BATCH_BYTES) sendBatch();
      else scheduled ??= setTimeout(sendBatch, BATCH_MS);
    },
    flush: () => (closed ? Promise.resolve() : drained()),
    close() {
      if (closed) return Promise.resolve();
      closed = true;
      sendBatch();
      return new Promise<void>((resolve, reject) => {
        stream.end(() => (failure ? reject(failure) : resolve()));
      });
    },
  };
}
