import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { callbackSink, createRunner, defineAction, jsonlSink, type TraceEvent } from '../../src/index.js';
import { otelSink } from '../../src/otel/index.js';
import { FakeClock } from '../../src/testing/index.js';
import { otelHarness } from '../otel/support.js';

// Known secrets, each in a form the rules must catch: under a secret-looking key, or by its shape anywhere.
const PEM = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq9xK3\n-----END RSA PRIVATE KEY-----';
const SECRETS = {
  password: 'hunter2-Correct-Horse',
  apiKeyField: 'k3y-under-an-api-key-field',
  openai: 'sk-proj-4f9Kq2LmZx8Vb7Nc6Td5Re3W',
  stripe: 'sk_live_51H8abcdEFGHijklMNOPqrst',
  github: 'ghp_1234567890abcdefghijklmnopqrstuvwxyzAB',
  aws: 'AKIAIOSFODNN7EXAMPLE',
  jwt: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
  bearer: 'abcDEF123456ghiJKL789',
  slack: 'xoxb-123456789012-abcdefghijkl',
  google: 'AIzaSyA-1234567890abcdefghijklmnopqrstu',
  card: '4111 1111 1111 1111',
  cardDigits: '4242424242424242',
  dbPassword: 'pa55word-db',
  inMessage: 'swordfish99',
  employee: 'EMP-204981',
  pem: 'MIIEowIBAAKCAQEA7bq9xK3',
};

const input = z.object({
  user: z.string(),
  password: z.string(),
  apiKey: z.string(),
  note: z.string(),
  headers: z.record(z.string(), z.string()),
});

function secretActions(mode: 'ok' | 'throws') {
  const accounts = new Map<string, Record<string, unknown>>();
  return defineAction({
    name: mode === 'ok' ? 'update_account' : 'update_account_flaky',
    description: 'Updates an account profile',
    input,
    target: (i) => `account:${i.user}`,
    postcondition: 'The account note is saved.',
    safeToRepeat: false,
    maxInFlightMs: 0,
    async execute(i) {
      if (mode === 'throws') {
        throw new Error(
          `connect failed: postgres://admin:${SECRETS.dbPassword}@db:5432/app password=${SECRETS.inMessage} Authorization: Bearer ${SECRETS.bearer}`,
        );
      }
      accounts.set(i.user, { user: i.user, note: i.note, card: SECRETS.card, owner: SECRETS.employee });
      // The raw result echoes credentials, as real SDK responses sometimes do.
      return {
        ok: true,
        session: { token: SECRETS.github, access_token: SECRETS.jwt },
        echo: `saved with key ${SECRETS.stripe} and ${SECRETS.slack}`,
        billing: { number: Number(SECRETS.cardDigits), label: SECRETS.cardDigits },
        pem: PEM,
      };
    },
    async observe(i) {
      if (mode === 'throws')
        throw new Error(`verifier refused google key ${SECRETS.google} for ${SECRETS.employee}`);
      return accounts.get(i.user) ?? null;
    },
    expect: (i) => ({ user: i.user, note: i.note, card: SECRETS.card }),
  });
}

describe('no known secret reaches any sink', () => {
  const dir = mkdtempSync(join(tmpdir(), 'readback-secrets-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('through full runs (verified, ambiguous, invalid) into JSONL, a callback and OpenTelemetry', async () => {
    const path = join(dir, 'trace.jsonl');
    const file = jsonlSink(path, { append: false });
    const seen: TraceEvent[] = [];
    const otel = otelHarness();
    const runner = createRunner({
      clock: new FakeClock(),
      trace: {
        // Everything opted in, so redaction alone stands between the secrets and the sinks.
        recordArguments: true,
        recordResults: true,
        redaction: { rules: [{ name: 'employee_id', value: /EMP-\d{6}/ }] },
        sinks: [
          file,
          callbackSink((e) => void seen.push(e)),
          otelSink({ tracer: otel.tracer, meter: otel.meter, recordArguments: true, recordResults: true }),
        ],
      },
    });
    const args = {
      user: 'ana',
      password: SECRETS.password,
      apiKey: SECRETS.apiKeyField,
      note: `keys: ${SECRETS.openai} ${SECRETS.aws} card ${SECRETS.card} id ${SECRETS.employee}`,
      headers: { Authorization: `Bearer ${SECRETS.bearer}`, 'x-request-id': 'req-1' },
    };
    const good = secretActions('ok');
    const ok = await runner.run(good, args, { runId: 'run-secrets' });
    const flaky = await runner.run(secretActions('throws'), args, { runId: 'run-secrets' });
    const invalid = await runner.run(good, { ...args, user: 42 }, { runId: 'run-secrets' });
    expect([ok.status, flaky.status, invalid.status]).toEqual(['verified', 'unknown', 'failed']);
    await file.close();

    const outputs = {
      jsonl: readFileSync(path, 'utf8'),
      callback: JSON.stringify(seen),
      spans: JSON.stringify(
        otel.exporter
          .getFinishedSpans()
          .map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })),
      ),
      metrics: JSON.stringify(await otel.allMetrics()),
    };
    // The record is really there: the runs' events, the arguments and raw results (redacted), three spans.
    expect(
      outputs.jsonl
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    ).toEqual(seen);
    expect(seen.filter((e) => e.type === 'completion')).toHaveLength(3);
    expect(outputs.callback).toContain('[redacted');
    expect(outputs.callback).toContain('req-1');
    expect(otel.exporter.getFinishedSpans()).toHaveLength(3);
    expect(outputs.spans).toContain('gen_ai.tool.call.arguments');
    expect(outputs.spans).toContain('gen_ai.tool.call.result');

    for (const [sink, text] of Object.entries(outputs)) {
      for (const [name, secret] of Object.entries(SECRETS)) {
        expect(text.includes(secret), `${name} leaked into ${sink}`).toBe(false);
        expect(
          text.includes(JSON.stringify(secret).slice(1, -1)),
          `${name} (escaped) leaked into ${sink}`,
        ).toBe(false);
      }
      expect(text.includes(SECRETS.card.replace(/ /g, '')), `card digits leaked into ${sink}`).toBe(false);
    }
    await otel.shutdown();
  });
});
