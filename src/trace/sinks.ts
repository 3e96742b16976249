import { closeSync, constants, fstatSync, openSync, readSync, writeSync } from 'node:fs';
import { optionalBoolean, ReadbackError } from '../errors.js';
import type { TraceEvent, TraceEventType, TraceSink } from './events.js';

/** Options shared by the built-in sinks. */
export interface SinkOptions {
  /**
   * Only these event types reach the sink (default: all). When every sink of a runner lists its types, events
   * no sink takes are never built: e.g. leave out `state.transition` to skip the store's transitions.
   */
  types?: Iterable<TraceEventType>;
}

/** A sink that hands every event to a function (already redacted; do not mutate it). */
export function callbackSink(
  onEvent: (event: TraceEvent) => void | Promise<void>,
  options: SinkOptions = {},
): TraceSink {
  if (typeof onEvent !== 'function') {
    throw new ReadbackError('invalid_options', 'expected a function', 'callbackSink(onEvent)');
  }
  const types = typesOf(options, 'callbackSink(options).types');
  return types ? { write: onEvent, types } : { write: onEvent };
}

/** Options of `jsonlSink`. */
export interface JsonlSinkOptions extends SinkOptions {
  /** Append to an existing file (default) or truncate it first. */
  append?: boolean;
}

const EVENT_TYPES: ReadonlySet<string> = new Set<TraceEventType>([
  'run.started',
  'tool.selected',
  'permission.decided',
  'operation.reserved',
  'execute.started',
  'execute.finished',
  'observe',
  'state.transition',
  'completion',
  'run.error',
]);

function typesOf(options: SinkOptions, field: string): ReadonlySet<TraceEventType> | undefined {
  if (options.types === undefined) return undefined;
  const types = typeof options.types === 'string' ? undefined : [...options.types];
  if (!types?.every((type) => EVENT_TYPES.has(type))) {
    throw new ReadbackError(
      'invalid_options',
      `expected event types (${[...EVENT_TYPES].join(', ')})`,
      field,
    );
  }
  return new Set(types);
}

/** A JSONL sink: one event per line, appended in batches; call `close()` when done. */
export interface JsonlSink extends TraceSink {
  readonly path: string;
  flush(): Promise<void>;
  close(): Promise<void>;
}

// Lines are gathered in one buffer and written to the file in batches, with a synchronous append each: the
// event loop may not turn for a long time (a loop of runs whose tools answer from memory), and writes queued on
// a stream until it does would hold every batch of the whole trace in memory. A batch goes out when it nears
// BATCH_BYTES or BATCH_MS after its first line, whichever comes first (`flush()` and `close()` send it at
// once). Each line is encoded straight into the buffer: appending lines to one string and converting it at the
// end cost ~3× the JSON encoding itself (the joined string is flattened, then re-encoded as UTF-8, and one
// non-ASCII character, such as the quotes around a postcondition, makes the whole batch a two-byte string).
const BATCH_BYTES = 64 * 1024;
const BATCH_MS = 50;
// UTF-8 needs at most 3 bytes per UTF-16 code unit (a surrogate pair takes 4 bytes for 2 units).
const MAX_BYTES_PER_UNIT = 3;
const NEWLINE = 0x0a;

// The sinks with lines not yet written, sent when the process exits (`process.exit()`, an uncaught exception,
// or the event loop running out): one listener for all of them, added with the first.
const unsent = new Set<() => void>();
let exitListening = false;
function sendOnExit(send: () => void): void {
  unsent.add(send);
  if (exitListening) return;
  exitListening = true;
  process.on('exit', () => {
    for (const pending of unsent) pending();
  });
}

/**
 * Writes each event as one JSON line to `path`. Lines are batched (at most 50 ms or 64 KiB) and each batch is
 * one synchronous append, to the OS (not synced to the disk); `flush()` sends the batch at once, `close()` also
 * closes the file, and both reject when a write failed (a repeated `close()` or a later `flush()` returns the
 * same promise). A process that exits without closing (`process.exit()`, an uncaught exception) still writes
 * its last batch from an `exit` listener; a signal or a crash loses at most that batch, never part of a line.
 * Every write appends (`O_APPEND`), also after `append: false` truncated the file.
 */
export function jsonlSink(path: string, options: JsonlSinkOptions = {}): JsonlSink {
  if (typeof path !== 'string' || path === '') {
    throw new ReadbackError('invalid_options', 'must be a non-empty file path', 'jsonlSink(path)');
  }
  if (typeof options !== 'object' || options === null) {
    throw new ReadbackError('invalid_options', 'expected an options object', 'jsonlSink(options)');
  }
  optionalBoolean(options.append, 'jsonlSink(options).append');
  const types = typesOf(options, 'jsonlSink(options).types');
  // Always O_APPEND, also when truncating: a file descriptor of its own with a plain 'w' writes at its own
  // offset, over the lines another sink or process appended to the same file since.
  const append = options.append !== false;
  const flags =
    constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | (append ? 0 : constants.O_TRUNC);
  // Opened here, synchronously: a directory, a missing folder or a file that cannot be written is reported by
  // this call, not found later by a flush() after the runs' events were already lost.
  let fd: number;
  try {
    fd = openSync(path, flags);
  } catch (error) {
    throw new ReadbackError(
      'invalid_options',
      `cannot open ${path} for writing: ${error instanceof Error ? error.message : String(error)}`,
      'jsonlSink(path)',
    );
  }
  if (append) endTornLine(path, fd);
  let failure: unknown;
  // Set by the first close(): later close() and flush() calls return it.
  let closing: Promise<void> | undefined;
  // The batch being filled; a write copies it to the OS, so one buffer serves every batch.
  const buffer = Buffer.allocUnsafe(BATCH_BYTES);
  let used = 0;
  let scheduled: ReturnType<typeof setTimeout> | undefined;
  // One append of the whole chunk; a short write (rare, on a file) is finished by the next one.
  const appendAll = (chunk: Buffer) => {
    try {
      for (let done = 0; done < chunk.length; ) done += writeSync(fd, chunk, done, chunk.length - done);
    } catch (error) {
      failure ??= error;
    }
  };
  const sendBatch = () => {
    if (scheduled) clearTimeout(scheduled);
    scheduled = undefined;
    if (used === 0) return;
    unsent.delete(sendBatch);
    // After a failed write the lines are dropped: the failure is what every later call reports.
    if (!failure) appendAll(buffer.subarray(0, used));
    used = 0;
  };
  const settled = () => (failure ? Promise.reject(failure) : Promise.resolve());
  return {
    path,
    ...(types ? { types } : {}),
    write(event) {
      if (failure) throw failure;
      if (closing) throw new ReadbackError('invalid_options', 'the JSONL sink is closed', 'jsonlSink');
      const line = JSON.stringify(event);
      // Room for the worst case of this line plus its newline; otherwise the batch goes out first.
      const room = line.length * MAX_BYTES_PER_UNIT + 1;
      if (room > BATCH_BYTES - used) {
        sendBatch();
        if (failure) throw failure;
        if (room > BATCH_BYTES) {
          // A line bigger than a whole batch goes out on its own, in order after what came before.
          appendAll(Buffer.from(`${line}\n`));
          if (failure) throw failure;
          return;
        }
      }
      used += buffer.write(line, used);
      buffer[used++] = NEWLINE;
      if (scheduled === undefined) {
        // The timer does not hold the process open: the exit listener writes what is left.
        scheduled = setTimeout(sendBatch, BATCH_MS).unref();
        sendOnExit(sendBatch);
      }
    },
    flush() {
      if (closing) return closing;
      sendBatch();
      return settled();
    },
    close() {
      if (closing) return closing;
      sendBatch();
      try {
        closeSync(fd);
      } catch (error) {
        failure ??= error;
      }
      closing = settled();
      // A caller that never awaits close() must not see an unhandled rejection; awaiting it still rejects.
      closing.catch(() => {});
      return closing;
    },
  };
}

// A process killed in the middle of a write can leave its last line cut short; appending right after it would
// glue this run's first line onto it and lose both. A newline first keeps the cut line, and only it, broken.
function endTornLine(path: string, fd: number): void {
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.size === 0) return;
    const last = Buffer.alloc(1);
    const reader = openSync(path, 'r');
    try {
      readSync(reader, last, 0, 1, stat.size - 1);
    } finally {
      closeSync(reader);
    }
    if (last[0] !== NEWLINE) writeSync(fd, '\n');
  } catch {
    // A file that cannot be read back (write-only) is appended to as it is.
  }
}
