// Overhead of the run record per action: runner.run on memoryStore() with no trace, against the same runs with
// a callback sink, the JSONL file sink and the OpenTelemetry adapter (real SDK providers, spans exported to a
// no-op exporter, metrics aggregated). Run with `npm run bench:trace` (builds first). Loops alternate within
// each round, in a rotating order, so machine noise hits all alike; we report per-round rates, their medians
// and the median of the per-round ratios to the untraced loop. BENCH_ISOLATE=1 runs each loop in a process of
// its own (see below).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { callbackSink, createRunner, jsonlSink, memoryStore } from '../dist/index.js';
import { otelSink } from '../dist/otel/index.js';
import { makeAction, makeSystem, median, startServer, stopServer } from './systems.js';

const OPS = Number(process.env.BENCH_OPS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
// Loopback HTTP is ~5x slower per action; fewer actions keep the run short.
const HTTP_OPS = Number(process.env.BENCH_HTTP_OPS ?? 4_000);
// BENCH_ISOLATE=1: actions the timed runner runs first, uncounted, in its child process.
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3_000);
// BENCH_IO=none,turn (default all three) and BENCH_KINDS=none,callback (default all five) narrow a run.
const IOS = (process.env.BENCH_IO ?? 'none,turn,http').split(',');
const dir = mkdtempSync(join(tmpdir(), 'readback-trace-bench-'));
// Each loop leaves ~20 000 operation records behind in its store; collecting them before the next loop starts
// (outside its timing) keeps one loop's garbage from being charged to whichever loop runs after it.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc');

class NoopReader extends MetricReader {
  async onShutdown() {}
  async onForceFlush() {}
}
const noopExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };

// Each kind builds its sinks fresh per loop; `finish` waits for what the sink still owes (the file's writes).
const KINDS = {
  none: () => ({ trace: undefined, finish: async () => {} }),
  callback: () => {
    let events = 0;
    return {
      trace: { sinks: [callbackSink(() => void events++)] },
      finish: async () => {
        if (events === 0) throw new Error('the callback sink saw no events');
      },
    };
  },
  // Opt-in (BENCH_KINDS=none,callback,callbackIdle): a sink that takes only `run.error`, so a traced call builds
  // no event at all; what remains is the cost of being traced (the call's record, the argument hash, hooks).
  callbackIdle: () => ({
    trace: { sinks: [callbackSink(() => {}, { types: ['run.error'] })] },
    finish: async () => {},
  }),
  // Opt-in (BENCH_KINDS=none,callback,callbackCompletions): a sink that takes only `completion` events, the
  // call's outcome with its claim and evidence: what a deployment that logs outcomes alone pays.
  callbackCompletions: () => {
    let events = 0;
    return {
      trace: { sinks: [callbackSink(() => void events++, { types: ['completion'] })] },
      finish: async () => {
        if (events === 0) throw new Error('the completion sink saw no events');
      },
    };
  },
  jsonl: () => {
    const path = join(dir, `trace-${Math.random().toString(36).slice(2)}.jsonl`);
    const file = jsonlSink(path, { append: false });
    return {
      trace: { sinks: [file] },
      finish: async () => {
        await file.close();
        if (statSync(path).size === 0) throw new Error('the JSONL file is empty');
        rmSync(path);
      },
    };
  },
  // The adapter with no OpenTelemetry SDK registered: the API's no-op tracer and meter.
  otelApiOnly: () => {
    const sink = otelSink();
    return {
      trace: { sinks: [sink] },
      finish: async () => {
        if (sink.openSpans() !== 0) throw new Error('spans left open');
      },
    };
  },
  otel: () => {
    const tracerProvider = new BasicTracerProvider({
      spanProcessors: [new BatchSpanProcessor(noopExporter)],
    });
    const meterProvider = new MeterProvider({ readers: [new NoopReader()] });
    const sink = otelSink({
      tracer: tracerProvider.getTracer('bench'),
      meter: meterProvider.getMeter('bench'),
    });
    return {
      trace: { sinks: [sink] },
      finish: async () => {
        if (sink.openSpans() !== 0) throw new Error('spans left open');
        await tracerProvider.shutdown();
        await meterProvider.shutdown();
      },
    };
  },
};

// CPU time of this process's main thread alone (Linux), in µs: the process total also counts V8's helper
// threads, whose garbage collection of the memory store's ever-growing heap is the same with or without a trace.
function mainThreadMicros() {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10_000; // clock ticks at 100 Hz
  } catch {
    return Number.NaN;
  }
}

// What `otelSink` hands the SDK for one committed action of the bench's own: its span (name, kind, attributes,
// events) and the histogram points it records, read from one real traced action into in-memory exporters.
async function sdkWorkOfOneAction() {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const meterProvider = new MeterProvider({ readers: [new NoopReader()] });
  const meter = meterProvider.getMeter('bench');
  const points = [];
  // The adapter's meter, with each histogram's points noted as they are recorded.
  const noting = Object.create(meter, {
    createHistogram: {
      value: (name, options) => {
        const histogram = meter.createHistogram(name, options);
        const record = (value, attributes) => {
          points.push({ name, value, attributes });
          histogram.record(value, attributes);
        };
        return { record };
      },
    },
  });
  const sink = otelSink({ tracer: tracerProvider.getTracer('bench'), meter: noting });
  const runner = createRunner({ store: memoryStore(), trace: { sinks: [sink] } });
  const action = makeAction(makeSystem('none'));
  await runner.run(action, { id: 'shape-1', status: 'done' }, { runId: 'bench' });
  exporter.reset();
  points.length = 0;
  await runner.run(action, { id: 'shape-2', status: 'done' }, { runId: 'bench' });
  const spans = exporter.getFinishedSpans();
  if (spans.length !== 1 || points.length === 0)
    throw new Error(`expected one span and some points, got ${spans.length}`);
  await tracerProvider.shutdown();
  await meterProvider.shutdown();
  const [span] = spans;
  return { name: span.name, kind: span.kind, attributes: span.attributes, events: span.events, points };
}

// BENCH_KINDS=…,otelSdkFloor (in the defaults): the untraced runner, and after each action the SDK alone makes
// the span, span events and histogram points `otelSink` makes for it (copied attributes, as an adapter builds them
// per call; no readback code at all). Its overhead is what any adapter over this SDK pays at least.
KINDS.otelSdkFloor = async () => {
  const shape = await sdkWorkOfOneAction();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(noopExporter)] });
  const meterProvider = new MeterProvider({ readers: [new NoopReader()] });
  const tracer = tracerProvider.getTracer('bench');
  const meter = meterProvider.getMeter('bench');
  const histograms = new Map(shape.points.map((p) => [p.name, meter.createHistogram(p.name)]));
  let spans = 0;
  return {
    trace: undefined,
    after: () => {
      const span = tracer.startSpan(shape.name, { kind: shape.kind });
      for (const event of shape.events) span.addEvent(event.name, { ...event.attributes }, performance.now());
      span.setAttributes({ ...shape.attributes });
      span.end();
      for (const point of shape.points)
        histograms.get(point.name).record(point.value, { ...point.attributes });
      spans++;
    },
    finish: async () => {
      if (spans === 0) throw new Error('the SDK floor made no span');
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
    },
  };
};

const DEFAULT_KINDS = Object.keys(KINDS).filter(
  (kind) => !['callbackIdle', 'callbackCompletions'].includes(kind),
);

// `warmup`: actions the same runner runs first, not counted (a fresh runner's functions are optimized only a few
// thousand actions in, and a traced runner has more of them).
async function runLoop(kind, io, warmup = 0) {
  const ops = io === 'http' ? HTTP_OPS : OPS;
  const system = makeSystem(io);
  const action = makeAction(system);
  const { trace, finish, after } = await KINDS[kind]();
  const runner = createRunner({ store: memoryStore(), ...(trace ? { trace } : {}) });
  for (let i = 0; i < warmup; i++) {
    const c = await runner.run(action, { id: `w${i}`, status: 'done' }, { runId: 'bench' });
    if (c.status !== 'verified') throw new Error(`${kind}: warm-up action ${i} came back ${c.status}`);
    if (after) after();
  }
  let verified = 0;
  collectGarbage();
  const start = process.hrtime.bigint();
  const cpuStart = process.cpuUsage();
  const mainStart = mainThreadMicros();
  for (let i = 0; i < ops; i++) {
    const c = await runner.run(action, { id: `r${i}`, status: 'done' }, { runId: 'bench' });
    if (c.status === 'verified') verified++;
    if (after) after();
  }
  await finish();
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu = process.cpuUsage(cpuStart);
  const mainUsPerOp = (mainThreadMicros() - mainStart) / ops;
  if (verified !== ops) throw new Error(`${kind}: verified ${verified} of ${ops}`);
  // CPU time (user + system, all of this process's threads) is reported too: on a shared, loaded machine it
  // moves far less than wall-clock time, which also counts the time other processes held the cores.
  return { rate: ops / seconds, cpuUsPerOp: (cpu.user + cpu.system) / ops, mainUsPerOp };
}

// BENCH_ISOLATE=1: each loop runs in a child process of its own (warmed up there first), so the JIT and
// the heap of one trace configuration never carry over into another's, as in a deployment, where a
// process runs with one configuration. Rounds still alternate the configurations in a rotating order.
const ISOLATE = process.env.BENCH_ISOLATE === '1';
const CHILD = process.argv[2] === '--child';

/** One loop in a fresh child process: a warm-up loop, then the timed one, reported as JSON on stdout. */
function isolatedLoop(kind, io) {
  const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', kind, io], {
    encoding: 'utf8',
    env: process.env,
  });
  return JSON.parse(out.trim().split('\n').at(-1));
}

async function measure(io) {
  const kinds = (process.env.BENCH_KINDS ?? DEFAULT_KINDS.join(',')).split(',');
  if (kinds[0] !== 'none' || kinds.some((k) => !KINDS[k]))
    throw new Error(`BENCH_KINDS must start with none: ${kinds}`);
  const loop = ISOLATE ? async (kind, io) => isolatedLoop(kind, io) : runLoop;
  if (!ISOLATE) for (const kind of kinds) await loop(kind, io); // warm-up, not counted
  const series = (k) => [k, { rates: [], ratios: [], cpu: [], cpuRatios: [], main: [], mainRatios: [] }];
  const by = Object.fromEntries(kinds.map(series));
  for (let round = 0; round < ROUNDS; round++) {
    const order = kinds.map((_, i) => kinds[(i + round) % kinds.length]);
    const got = {};
    for (const kind of order) got[kind] = await loop(kind, io);
    for (const kind of kinds) {
      by[kind].rates.push(got[kind].rate);
      by[kind].ratios.push(got[kind].rate / got.none.rate);
      by[kind].cpu.push(got[kind].cpuUsPerOp);
      by[kind].cpuRatios.push(got[kind].cpuUsPerOp / got.none.cpuUsPerOp);
      by[kind].main.push(got[kind].mainUsPerOp);
      by[kind].mainRatios.push(got[kind].mainUsPerOp / got.none.mainUsPerOp);
    }
  }
  return kinds.map((kind) => ({
    io,
    kind,
    rate: median(by[kind].rates),
    ratio: median(by[kind].ratios),
    cpu: median(by[kind].cpu),
    cpuRatio: median(by[kind].cpuRatios),
    main: median(by[kind].main),
    mainRatio: median(by[kind].mainRatios),
  }));
}

if (CHILD) {
  const [, , , kind, io] = process.argv;
  if (io === 'http') await startServer();
  await runLoop(kind, io); // warms up the shared code (store, action, system), not counted
  const result = await runLoop(kind, io, WARMUP);
  if (io === 'http') stopServer();
  rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify(result));
  process.exit(0);
}

if (IOS.includes('http')) await startServer();
const results = [];
for (const io of IOS) results.push(...(await measure(io)));
if (IOS.includes('http')) stopServer();
rmSync(dir, { recursive: true, force: true });

const label = {
  none: 'no trace',
  callback: 'callback sink',
  callbackIdle: 'callback sink taking no event type the call emits',
  callbackCompletions: 'callback sink taking completion events only',
  jsonl: 'JSONL file sink',
  otelApiOnly: 'OpenTelemetry sink, API only (no SDK registered)',
  otel: 'OpenTelemetry sink (SDK, batch processor, no-op exporter)',
  otelSdkFloor:
    'no trace, plus the same span and points made with the SDK directly (the floor under any adapter)',
};
const ioLabel = {
  none: 'Map, no I/O',
  turn: 'Map, one event-loop turn per call',
  http: 'HTTP on loopback (keep-alive)',
};
console.log(
  `readback trace overhead — ${OPS} committed actions (${HTTP_OPS} over HTTP) × ${ROUNDS} rounds, memoryStore, node ${process.version}${ISOLATE ? ', each loop in its own process' : ', all loops in one process'}`,
);
console.log(
  '| system of record | trace | ops/s | wall-clock overhead | CPU µs/op | CPU overhead | main thread µs/op | main-thread overhead |',
);
console.log('|---|---|---:|---:|---:|---:|---:|---:|');
const pct = (x) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
for (const r of results) {
  const wall = r.kind === 'none' ? '—' : pct(1 / r.ratio - 1);
  const cpu = r.kind === 'none' ? '—' : pct(r.cpuRatio - 1);
  const main = r.kind === 'none' || Number.isNaN(r.mainRatio) ? '—' : pct(r.mainRatio - 1);
  console.log(
    `| ${ioLabel[r.io]} | ${label[r.kind]} | ${Math.round(r.rate)} | ${wall} | ${r.cpu.toFixed(1)} | ${cpu} | ${r.main.toFixed(1)} | ${main} |`,
  );
}
console.log(
  "(medians over rounds; overheads are medians of per-round ratios to the untraced loop; main thread: /proc's 10 ms ticks)",
);
