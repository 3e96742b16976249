// The corpus check of secrets.test.ts, through the paths it did not take: checks on a secret field, observed
// values that are not plain data, results and error messages that carry JSON text, rejections, and a call that
// throws (run.error). Every sink is checked, the callback's events as a logger would print them.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  callbackSink,
  createRunner,
  defineAction,
  jsonlSink,
  memoryStore,
  ReadbackError,
  rejected,
  type TraceEvent,
} from '../../src/index.js';
import { otelSink } from '../../src/otel/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { otelHarness } from '../otel/support.js';

const SECRETS = {
  apiKey: 'k7Qw9ZpL2xVb8NcR',
  webhook: 'wh00kPa55Zr81Lmq',
  tag: 'tagS3cretQ0xV7',
  clientSecret: 'cl1entS3cretT9pR',
  rejection: 'rej3ctPa55Xy7Wq',
  thrown: 'thr0wnK3yMm4Zt8',
  observeError: '0bserveS3cr3tVv',
  store: 'st0reDbPa55Qq1',
};

const input = z.object({ user: z.string(), apiKey: z.string() });

function rotateKey() {
  const saved = new Map<string, Record<string, unknown>>();
  return defineAction({
    name: 'rotate_key',
    description: 'Sets a new API key for a user',
    input,
    target: (i) => `user:${i.user}`,
    postcondition: 'The user has the new key.',
    safeToRepeat: true,
    async execute(i) {
      saved.set(i.user, {
        user: i.user,
        api_key: i.apiKey,
        webhook: new URL(`https://hooks:${SECRETS.webhook}@hooks.example.com/in`),
        tags: new Map([['password', SECRETS.tag]]),
      });
      // An MCP-style result: the tool's answer as JSON text.
      return {
        content: [{ type: 'text', text: JSON.stringify({ ok: true, client_secret: SECRETS.clientSecret }) }],
      };
    },
    async observe(i) {
      return saved.get(i.user) ?? null;
    },
    expect: (i, o) => ({
      api_key: i.apiKey,
      webhook: (o as { webhook?: unknown } | null)?.webhook,
      tags: (o as { tags?: unknown } | null)?.tags,
    }),
  });
}

const refused = defineAction({
  name: 'rotate_key_refused',
  description: 'x',
  input,
  target: (i) => `user:${i.user}`,
  postcondition: 'The user has the new key.',
  safeToRepeat: true,
  async execute() {
    return rejected('upstream_refused', `upstream said {"user":"ana","password":"${SECRETS.rejection}"}`);
  },
  async observe() {
    return null;
  },
  expect: (i) => ({ api_key: i.apiKey }),
});

const broken = defineAction({
  name: 'rotate_key_broken',
  description: 'x',
  input,
  target: (i) => `user:${i.user}`,
  postcondition: 'The user has the new key.',
  safeToRepeat: false,
  maxInFlightMs: 0,
  async execute() {
    throw new Error(`POST /keys failed: 401 {"X-Api-Key":"${SECRETS.thrown}"}`);
  },
  async observe() {
    throw new Error(`read failed for config {"apiKey": "${SECRETS.observeError}"}`);
  },
  expect: (i) => ({ api_key: i.apiKey }),
});

describe('no secret reaches any sink through checks, JSON text, rejections or run.error', () => {
  const dir = mkdtempSync(join(tmpdir(), 'readback-secrets-audit-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('JSONL, callback (as printed) and OpenTelemetry stay clean', async () => {
    const path = join(dir, 'trace.jsonl');
    const file = jsonlSink(path, { append: false });
    const seen: TraceEvent[] = [];
    const otel = otelHarness();
    const sinks = [
      file,
      callbackSink((e) => void seen.push(e)),
      otelSink({ tracer: otel.tracer, meter: otel.meter, recordArguments: true, recordResults: true }),
    ];
    const trace = { recordArguments: true, recordResults: true, sinks };
    const runner = createRunner({ clock: new FakeClock(), trace });
    const args = { user: 'ana', apiKey: SECRETS.apiKey };
    const statuses = [
      (await runner.run(rotateKey(), args, { runId: 'run-a' })).status,
      (await runner.run(refused, args, { runId: 'run-a' })).status,
      (await runner.run(broken, args, { runId: 'run-a' })).status,
    ];
    expect(statuses).toEqual(['verified', 'failed', 'unknown']);

    // A store that fails with its connection details in the message: the call throws, run.error is recorded.
    const store = memoryStore();
    const failing = createRunner({
      clock: new FakeClock(),
      store: {
        ...store,
        reserve: async () => {
          throw new ReadbackError(
            'store_closed',
            `connect failed: {"user":"app","password":"${SECRETS.store}"}`,
            'store',
          );
        },
      },
      trace,
    });
    await expect(failing.run(rotateKey(), args, { runId: 'run-b' })).rejects.toThrow(/connect failed/);
    await file.close();

    expect(seen.some((e) => e.type === 'run.error')).toBe(true);
    const outputs = {
      jsonl: readFileSync(path, 'utf8'),
      callback: inspect(seen, { depth: 50, showHidden: true }),
      spans: JSON.stringify(
        otel.exporter
          .getFinishedSpans()
          .map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })),
      ),
      metrics: JSON.stringify(await otel.allMetrics()),
    };
    expect(outputs.spans).toContain('gen_ai.tool.call.result');
    for (const [sink, text] of Object.entries(outputs)) {
      for (const [name, secret] of Object.entries(SECRETS)) {
        expect.soft(text.includes(secret), `${name} leaked into ${sink}`).toBe(false);
      }
    }
    const verified = seen.find((e) => e.type === 'completion');
    // The record is still there: the check on the key names it and says it passed.
    expect(verified?.type === 'completion' && verified.checks[0]).toEqual({
      name: 'api_key',
      pass: true,
      expected: '[redacted]',
      observed: '[redacted]',
    });
    await otel.shutdown();
  });
});
