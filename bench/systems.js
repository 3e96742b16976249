// The target systems and the action the runner and trace benches share. Plain JS against the built dist.
import { fork } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { defineAction } from '../dist/index.js';

// The system of record. `http`: a real HTTP service on loopback (the cheapest real remote call a tool
// makes); `turn`: a Map behind one event-loop turn per call; `none`: a Map with no I/O at all. The last two
// are the runner's worst cases, reported so its fixed overhead is visible.
export function makeSystem(io) {
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

// The HTTP service runs in a child process of its own (bench/http-service.js), so its CPU is never counted in
// the bench's, whose CPU figures are then readback's and the HTTP client's alone.
let service;
let port = 0;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
/** Starts the loopback HTTP service the `http` system talks to, in a child process. */
export async function startServer() {
  service = fork(fileURLToPath(new URL('./http-service.js', import.meta.url)), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  port = await new Promise((resolve, reject) => {
    service.once('message', (message) => resolve(message.port));
    service.once('exit', (code) => reject(new Error(`the HTTP service exited with code ${code}`)));
  });
}

function request(method, path, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, agent }, (res) => {
      let data = '';
      res.on('data', (chunk) => {
        data += chunk;
      });
      res.on('end', () => resolve(JSON.parse(data)));
    });
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

export function makeAction(system) {
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

/** Stops the loopback HTTP service and its keep-alive sockets. */
export function stopServer() {
  agent.destroy();
  service.kill();
}

/** The median of a list of numbers. */
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
