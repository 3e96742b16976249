import {
  closeSync,
  constants,
  createWriteStream,
  fstatSync,
  openSync,
  readSync,
  type WriteStream,
  writeSync,
} from 'node:fs';
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

/** A JSONL sink: one event per line, written in batches through a stream; call `close()` when done. */
export interface JsonlSink extends TraceSink {
  readonly path: string;
  flush(): Promise<void>;
  close(): Promise<void>;
}

// Lines are gathered and handed to the stream in batches: each stream write is a file-system request through
// libuv's thread pool, costing far more than the JSON encoding. A batch goes out when it nears BATCH_BYTES or
// BATCH_MS after its first line, whichever comes first (`flush()` and `close()` send it at once). Each line is
// encoded straight into the batch's buffer: appending lines to one string and converting it at the end cost
// ~3× the JSON encoding itself (the joined string is flattened, then re-encoded as UTF-8, and one non-ASCII
// character, such as the quotes around a postcondition, makes the whole batch a two-byte string).
const BATCH_BYTES = 64 * 1024;
const BATCH_MS = 50;
// UTF-8 needs at most 3 bytes per UTF-16 code unit (a surrogate pair takes 4 bytes for 2 units).
const MAX_BYTES_PER_UNIT = 3;
const NEWLINE = 0x0a;

/**
 * Writes each event as one JSON line to `path`. Writes are batched (at most 50 ms or 64 KiB) and asynchronous so
 * a run never waits on the disk; `flush()` resolves once every line so far reached the file, `close()` also
 * ends the stream. Every event written before `close()` is in the file when it resolves (both reject when a
 * write failed; a repeated `close()` or a later `flush()` returns the same promise); a process that exits
 * without closing (`process.exit()`, an uncaught exception) loses the batch not yet sent (at most 50 ms or
 * 64 KiB). Every write appends (`O_APPEND`), also after `append: false` truncated the file.
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
  const stream: WriteStream = createWriteStream(path, { fd });
  let failure: unknown;
  // Set by the first close(): later close() and flush() calls wait on it, so none resolves before the end.
  let closing: Promise<void> | undefined;
  // The batch being filled; the stream keeps a sent buffer until written, so each batch gets a fresh one.
  let buffer = Buffer.allocUnsafe(BATCH_BYTES);
  let used = 0;
  let scheduled: ReturnType<typeof setTimeout> | undefined;
  // A failed write reports to its callback before the stream's 'error' event, which comes a tick later: the
  // callback records it at once, so the next write, flush() or close() cannot miss it.
  const onWritten = (error?: Error | null) => {
    if (error) failure ??= error;
  };
  stream.on('error', onWritten);
  const sendBatch = () => {
    if (scheduled) clearTimeout(scheduled);
    scheduled = undefined;
    if (used === 0 || failure) return;
    stream.write(buffer.subarray(0, used), onWritten);
    buffer = Buffer.allocUnsafe(BATCH_BYTES);
    used = 0;
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
    ...(types ? { types } : {}),
    write(event) {
      if (failure) throw failure;
      if (closing) throw new ReadbackError('invalid_options', 'the JSONL sink is closed', 'jsonlSink');
      const line = JSON.stringify(event);
      // Room for the worst case of this line plus its newline; otherwise the batch goes out first.
      const room = line.length * MAX_BYTES_PER_UNIT + 1;
      if (room > BATCH_BYTES - used) {
        sendBatch();
        if (room > BATCH_BYTES) {
          // A line bigger than a whole batch goes out on its own, in order after what came before.
          stream.write(`${line}\n`, onWritten);
          return;
        }
      }
      used += buffer.write(line, used);
      buffer[used++] = NEWLINE;
      scheduled ??= setTimeout(sendBatch, BATCH_MS);
    },
    flush: () => closing ?? drained(),
    close() {
      if (closing) return closing;
      sendBatch();
      closing = new Promise<void>((resolve, reject) => {
        // A write that failed before the end is reported here even when flush() already reported it: lines
        // are missing from the file, and close() resolving would say they are all there.
        stream.end((error?: Error | null) => (failure || error ? reject(failure ?? error) : resolve()));
      });
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
