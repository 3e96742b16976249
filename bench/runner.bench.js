// Runner throughput on the memory store against the same execute + observe + compare written by hand.
// Run with `npm run bench` (builds first). Rounds alternate between the two loops so machine noise hits
// both alike; we report per-round rates, their medians and the median of per-round ratios.
import http from 'node:http';
import { createRunner, defineAction, memoryStore } from '../dist/index.js';

const OPS = Number(process.env.BENCH_OPS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);

// The system of record. `http`: a real HTTP service on loopback (the cheapest real remote call a tool
// makes); `turn`: a Map behind one event-loop turn per call; `none`: a Map with no I/O at all. The last two
// are the runner's worst cases, reported so its fixed overhead is visible.
function makeSystem(io) {
  if (io === 'http') return httpSystem();
  const rows = new Map();
  const turn = io === 'turn' ? () => new Promise((resolve) => setImmediate(resolve)) : async () => {};
  return {
    async write(id, status) {
      await turn();
      rows.set(id, { id, status, version: (rows.get(id)?.version ?? 0) + 1 });
      return { ok: true };
    },
    async read(id) {
      await turn();
      const row = rows.get(id);
      return row ? { ...row } : null;
    },
  };
}

let server;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
async function startServer() {
  const rows = new Map();
  server = http.createServer((req, res) => {
    const id = req.url.slice(1);
    if (req.method === 'PUT') {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        rows.set(id, { id, status: JSON.parse(body).status, version: (rows.get(id)?.version ?? 0) + 1 });
        res.end('{"ok":true}');
      });
      return;
    }
    const row = rows.get(id);
    res.statusCode = row ? 200 : 404;
    res.end(row ? JSON.stringify(row) : 'null');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
}

function request(method, path, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: server.address().port, method, path, agent },
      (res) => {
        let data = '';
        res.on('data', (chunk) => {
          data += chunk;
        });
        res.on('end', () => resolve(JSON.parse(data)));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function httpSystem() {
  const prefix = `/${Math.random().toString(36).slice(2)}-`;
  return {
    write: (id, status) => request('PUT', `${prefix}${id}`, JSON.stringify({ status })),
    read: (id) => request('GET', `${prefix}${id}`),
  };
}

// A minimal Standard Schema so validation cost is the runner's own, not a library's.
const inputSchema = {
  '~standard': {
    version: 1,
    vendor: 'bench',
    validate: (value) =>
      typeof value?.id === 'string' && typeof value?.status === 'string'
        ? { value }
        : { issues: [{ message: 'expected { id, status }' }] },
  },
};

function makeAction(system) {
  return defineAction({
    name: 'set_status',
    description: 'Sets a row status',
    input: inputSchema,
    target: (input) => `row:${input.id}`,
    postcondition: 'The row has the requested status.',
    execute: (input) => system.write(input.id, input.status),
    observe: (input) => system.read(input.id),
    expect: (input) => ({ status: input.status }),
  });
}

async function runnerLoop(io) {
  const system = makeSystem(io);
  const action = makeAction(system);
  const runner = createRunner({ store: memoryStore() });
  let verified = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < OPS; i++) {
    const c = await runner.run(action, { id: `r${i}`, status: 'done' }, { runId: 'bench' });
    if (c.status === 'verified') verified++;
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (verified !== OPS) throw new Error(`runner verified ${verified} of ${OPS}`);
  return OPS / seconds;
}

async function handLoop(io) {
  const system = makeSystem(io);
  let verified = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < OPS; i++) {
    const input = { id: `r${i}`, status: 'done' };
    await system.write(input.id, input.status);
    const row = await system.read(input.id);
    if (row !== null && row.status === input.status) verified++;
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (verified !== OPS) throw new Error(`hand loop verified ${verified} of ${OPS}`);
  return OPS / seconds;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function measure(io) {
  await runnerLoop(io);
  await handLoop(io); // warm-up, not counted
  const runner = [];
  const hand = [];
  const ratios = [];
  for (let round = 0; round < ROUNDS; round++) {
    const r = await runnerLoop(io);
    const h = await handLoop(io);
    runner.push(r);
    hand.push(h);
    ratios.push(r / h);
  }
  return { io, runner: median(runner), hand: median(hand), ratio: median(ratios) };
}

await startServer();
const results = [];
for (const io of ['http', 'turn', 'none']) results.push(await measure(io));
server.close();
agent.destroy();
console.log(
  `readback runner vs hand-written loop — ${OPS} committed actions × ${ROUNDS} rounds, node ${process.version}`,
);
console.log('| I/O model | runner ops/s (median) | hand ops/s (median) | ratio (median of rounds) |');
console.log('|---|---:|---:|---:|');
for (const r of results) {
  const label = {
    http: 'HTTP on loopback (keep-alive)',
    turn: 'one event-loop turn per call',
    none: 'none (pure in-memory)',
  }[r.io];
  console.log(`| ${label} | ${Math.round(r.runner)} | ${Math.round(r.hand)} | ${r.ratio.toFixed(2)} |`);
}
