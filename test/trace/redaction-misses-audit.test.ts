// Secrets the run record's redaction let through (issue 6): authorization header values in text, card numbers
// with other separators, symbol keys and lists of [name, value] pairs, URL credentials; and inputs whose scan
// took quadratic time.
import { inspect } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Completion } from '../../src/contract/types.js';
import { createRedactor, createRunner, defineAction, type TraceEvent } from '../../src/index.js';
import { Tracer } from '../../src/runner/tracer.js';
import { firstSecretMatch, mayHoldSecret } from '../../src/trace/redact.js';

const SECRET = 'k7Qw9ZpL2xVb8NcR';
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const redactor = createRedactor();

// Everything a sink could get out of the value: its JSON text and what a logging callback would print.
function shown(value: unknown): string {
  return `${JSON.stringify(value)}\n${inspect(value, { depth: 50, showHidden: true })}`;
}

describe('authorization header values in free text', () => {
  it('go whatever their scheme, and prose after the header name stays', () => {
    const cases: [string, string][] = [
      [
        `GET /me failed: Authorization: Token ${SECRET}`,
        'GET /me failed: Authorization: [redacted:authorization]',
      ],
      [`authorization: token ${SECRET}`, 'authorization: [redacted:authorization]'],
      [`Authorization: ${SECRET}`, 'Authorization: [redacted:authorization]'],
      [`Proxy-Authorization: ${SECRET}\nHost: x`, 'Proxy-Authorization: [redacted:authorization]\nHost: x'],
      [`Authorization: Bearer: ${SECRET}`, 'Authorization: [redacted:bearer]'],
      [`sent Bearer: ${SECRET} twice`, 'sent [redacted:bearer] twice'],
      [
        `headers {'Authorization': 'Token ${SECRET}', 'Accept': 'json'}`,
        "headers {'Authorization': '[redacted:authorization]', 'Accept': 'json'}",
      ],
      [`"Authorization": "${SECRET}"} (cut`, '"Authorization": "[redacted:authorization]"} (cut'],
      [
        `Authorization: Digest username="ana", nonce="n1", response="${SECRET}"\nAccept: json`,
        'Authorization: [redacted:authorization]\nAccept: json',
      ],
      [
        `Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=${SECRET}`,
        'Authorization: [redacted:authorization]',
      ],
      // The spelling the built-in rules already knew still names its kind.
      ['Authorization: Basic dXNlcjpwYXNzd29yZA==', 'Authorization: [redacted:basic_auth]'],
      ['Authorization: Basic dXNlcjpwYXNz', 'Authorization: [redacted:basic_auth]'],
    ];
    for (const [input, expected] of cases) expect(redactor.redact(input), input).toBe(expected);
    for (const prose of [
      'Authorization: invalid credentials',
      'authorization: the user lacks a role',
      'not authorized',
    ])
      expect(redactor.redact(prose)).toBe(prose);
  });

  it('are taken out of the reason a completion quotes and of every trace event', async () => {
    const events: TraceEvent[] = [];
    const runner = createRunner({ trace: { sinks: [{ write: (e) => void events.push(e) }] } });
    const c = await runner.run(
      defineAction({
        name: 'get_profile',
        description: 'Reads a profile.',
        postcondition: 'The profile is read.',
        input: { '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => ({ value }) } },
        target: () => 'me',
        mode: 'optimistic',
        execute: async () => {
          throw new Error(`GET /me 500; sent Authorization: Token ${SECRET}`);
        },
      }),
      {},
      { runId: 'r' },
    );
    expect(c.reason).toContain('Authorization: [redacted:authorization]');
    expect(JSON.stringify(c)).not.toContain(SECRET);
    expect(events.length).toBeGreaterThan(3);
    expect(shown(events)).not.toContain(SECRET);
  });
});

describe('card numbers with other separators', () => {
  it('are found with double spaces, tabs, no-break spaces, spaced dashes and dotted groups of four', () => {
    const cards = [
      '4111  1111  1111  1111',
      '4111\t1111\t1111\t1111',
      '4111\u00a01111\u00a01111\u00a01111',
      '4111\u202f1111\u202f1111\u202f1111',
      '4111 - 1111 - 1111 - 1111',
      '4111.1111.1111.1111',
      '3782  822463  10005',
    ];
    for (const card of cards) {
      expect(redactor.redact(`card ${card}, exp 12/29`), card).toBe('card [redacted:card_number], exp 12/29');
      expect(redactor.redact({ note: `${card}` }), card).toEqual({ note: '[redacted:card_number]' });
    }
  });

  it('leaves Luhn-failing runs, floats, versions and ids alone', () => {
    const plain = [
      '1234  5678  9012  3456', // fails Luhn
      '4111.1111.1111.1112',
      'score 0.30000000000000004',
      'v2026.1130.0052.2181',
      'op_4111  1111  1111  1111',
      '4111_1111_1111_1111',
    ];
    for (const text of plain) expect(redactor.redact(text), text).toBe(text);
  });
});

describe('values a sink gets that JSON would not show', () => {
  it('values under symbol keys are redacted, and the caller keeps its own', () => {
    const note = Symbol('note');
    const password = Symbol('password');
    const value = { id: 7, [note]: `Bearer ${SECRET}`, [password]: SECRET };
    const out = redactor.redact({ scope: value }) as { scope: Record<symbol, unknown> };
    expect(shown(out)).not.toContain(SECRET);
    expect(out.scope[note]).toBe('[redacted:bearer]');
    expect(out.scope[password]).toBe('[redacted]');
    expect(out.scope).toMatchObject({ id: 7 });
    expect(value[note]).toBe(`Bearer ${SECRET}`);
    // A copy made for a string key keeps the symbol keys too, redacted.
    const mixed = redactor.redact({ token: SECRET, [note]: 'ok', [password]: SECRET }) as Record<
      symbol,
      unknown
    >;
    expect(mixed[note]).toBe('ok');
    expect(mixed[password]).toBe('[redacted]');
    // A clean object is still shared, not copied.
    const clean = { a: 1, [note]: 'fine' };
    expect(redactor.redact(clean)).toBe(clean);
  });

  it('a callback sink gets the evidence of a completion with its symbol-keyed values redacted', () => {
    const events: TraceEvent[] = [];
    const tracer = new Tracer(
      { sinks: [{ write: (e) => void events.push(e) }] },
      { now: () => 0, sleep: async () => {} },
    );
    const trace = tracer.begin({ name: 'a', mode: 'committed' }, { runId: 'r', entry: 'run' });
    const raw = Symbol('raw');
    const evidence = { status: 'done', [raw]: { headers: { authorization: SECRET } } };
    trace.completed({
      operationId: 'op_1',
      status: 'verified',
      message: 'ok',
      checks: [],
      evidence,
    } as unknown as Completion);
    const event = events.find((e) => e.type === 'completion') as unknown as {
      evidence: Record<symbol, unknown>;
    };
    expect(shown(event)).not.toContain(SECRET);
    expect(event.evidence[raw]).toEqual({ headers: { authorization: '[redacted]' } });
  });

  it('a list of [name, value] pairs has its values redacted by name, as an object would', () => {
    const headers = [
      ['Authorization', SECRET],
      ['X-Api-Key', SECRET],
      ['Accept', 'application/json'],
    ];
    expect(redactor.redact({ headers })).toEqual({
      headers: [
        ['Authorization', '[redacted]'],
        ['X-Api-Key', '[redacted]'],
        ['Accept', 'application/json'],
      ],
    });
    expect(headers[0]![1]).toBe(SECRET);
    const text = JSON.stringify(Object.entries({ client_secret: SECRET, region: 'eu' }));
    expect(JSON.parse(redactor.redact(text))).toEqual([
      ['client_secret', '[redacted]'],
      ['region', 'eu'],
    ]);
    // The name of a pair is scanned too, as any string in a list was.
    expect(redactor.redact([[`Bearer ${SECRET}`, 1]])).toEqual([['[redacted:bearer]', 1]]);
    // Rows that are not pairs, and pairs named with a phrase, are data.
    const rows = [['token', 'count', 3]];
    expect(redactor.redact(rows)).toBe(rows);
    const phrases = [['Secret Garden', 'a novel']];
    expect(redactor.redact(phrases)).toBe(phrases);
  });
});

describe('keys that are secrets themselves', () => {
  it('an object keyed by tokens loses the tokens, in data and in JSON text, and keeps every entry', () => {
    const key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';
    const sessions = { [key]: { user: 'ana' }, [`Bearer ${SECRET}`]: { user: 'bo' }, active: 2 };
    const out = redactor.redact({ sessions, password: 'x' });
    expect(shown(out)).not.toContain(key);
    expect(shown(out)).not.toContain(SECRET);
    expect(out).toEqual({
      sessions: { active: 2, '[redacted:api_key]': { user: 'ana' }, '[redacted:bearer]': { user: 'bo' } },
      password: '[redacted]',
    });
    // In JSON text where another value was redacted too (the scan of the whole text then never ran).
    const text = redactor.redact(JSON.stringify({ password: 'x', [key]: 1 }));
    expect(JSON.parse(text)).toEqual({ password: '[redacted]', '[redacted:api_key]': 1 });
    // Two keys that redact alike both stay.
    const two = redactor.redact({ [`${key}a`]: 1, [`${key}b`]: 2 });
    expect(Object.values(two).sort()).toEqual([1, 2]);
    expect(shown(two)).not.toContain(key);
  });
});

describe('URLs, labels and AWS keys', () => {
  it('URL credentials with an unescaped @ or a bare token go; an email in a query string stays', () => {
    const cases: [string, string][] = [
      [`https://user:p@ss:${SECRET}@x.com/a`, 'https://[redacted:url_credentials]@x.com/a'],
      [
        `git clone https://${SECRET}@github.com/o/r.git`,
        'git clone https://[redacted:url_credentials]@github.com/o/r.git',
      ],
      [
        'https://api.example.com:8443/?email=ana@example.com',
        'https://api.example.com:8443/?email=ana@example.com',
      ],
      ['https://host:8080?email=ana@example.com', 'https://host:8080?email=ana@example.com'],
      ['ssh://git@github.com/o/r.git', 'ssh://git@github.com/o/r.git'],
    ];
    for (const [input, expected] of cases) expect(redactor.redact(input), input).toBe(expected);
  });

  it('labels written with spaces or dots, passcodes and session ids in text', () => {
    const out = redactor.redact({
      'Pass Word': SECRET,
      'API Key': SECRET,
      'api.key': SECRET,
      passcode: SECRET,
    });
    expect(shown(out)).not.toContain(SECRET);
    const texts = [
      `GET /a;jsessionid=${SECRET}`,
      `?session_id=${SECRET}&x=1`,
      `SessionID: ${SECRET}`,
      // Keywords in any case: the header spelling most API docs use, Title_Case config keys.
      `X-API-Key: ${SECRET}`,
      `Api_Key=${SECRET}`,
      `Private-Key: ${SECRET}`,
      `PassWord=${SECRET}`,
    ];
    for (const text of texts) expect(redactor.redact(text), text).not.toContain(SECRET);
  });

  it('a secret access key goes when labelled or right after its key id; 40-character hashes stay', () => {
    const texts = [
      `aws_secret_access_key = ${AWS_SECRET}`,
      `AWS_SECRET_ACCESS_KEY=${AWS_SECRET}`,
      `{'SecretAccessKey': '${AWS_SECRET}'}`,
      `Access key ID,Secret access key\nAKIAIOSFODNN7EXAMPLE,${AWS_SECRET}\n`,
      `creds AKIAIOSFODNN7EXAMPLE:${AWS_SECRET}`,
    ];
    for (const text of texts) expect(redactor.redact(text), text).not.toContain(AWS_SECRET);
    const sha =
      'commit 9fceb02d0ae598e95dc970b74767f19372d61af8 and sha1 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12';
    expect(redactor.redact(sha)).toBe(sha);
  });
});

describe('the scan stays linear in the text', () => {
  // Before, each of the first two took minutes at this size (every `eyJ` or `PRIVATE KEY` restarted a scan to
  // the end of the text), and the third several seconds.
  it('a megabyte of base64 with many eyJ, of PEM-like labels, or of spaced digits is scanned in time', () => {
    const mb = 1 << 20;
    const base64 = 'eyJ'.repeat(mb / 3);
    const labels = `-----BEGIN ${'PRIVATE KEY '.repeat(mb / 12)}`;
    const digits = '7 '.repeat(mb / 2);
    const started = performance.now();
    expect(redactor.redact(base64)).toBe(base64);
    expect(redactor.redact(`${labels}x`)).toBe(`${labels}x`);
    expect(redactor.redact(digits)).toBe(digits);
    // Generous: the three take well under a second on one core.
    expect(performance.now() - started).toBeLessThan(8000);
    // A token at the start of a long run is still found.
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghij';
    expect(redactor.redact(`jwt ${jwt}`)).toBe('jwt [redacted:jwt]');
  });
});

describe('the prefilter', () => {
  it('passes every string the scan matches, with the new spellings', () => {
    const piece = fc.constantFrom(
      ...[
        'Authorization',
        'AUTHORIZATION',
        'authorization',
        'Token ',
        'Bearer',
        'bearer',
        'Digest ',
        ': ',
        ':',
      ],
      ...['=', '"', "'", '\\', ' ', '  ', '\t', '\u00a0', '\u202f', ' - ', '-', '.', ',', 'a=b', 'x="y"'],
      ...['4111', '1111', '1', '0', '22', SECRET, AWS_SECRET, 'AKIAIOSFODNN7EXAMPLE', '://', 'u', ':p@', '@'],
      ...[
        'X-API-Key',
        'Api_Key',
        'PassWord',
        'pASSWORD',
        'SessionID',
        'sessionid',
        'session_id',
        'eyJ',
        'eyJhbGciOiJIUzI1NiJ9',
        'PRIVATE KEY',
        '-----BEGIN ',
        '-----',
      ],
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 14 }), (parts) => {
        const s = parts.join('');
        if (!mayHoldSecret(s)) expect(firstSecretMatch(s)).toBeUndefined();
      }),
      { numRuns: 20_000 },
    );
  });
});
