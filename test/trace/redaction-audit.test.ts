// Secrets that reached sinks through the run record's redaction before: JSON text, labelled pairs and checks,
// objects that are not plain data, and spellings the built-in scan missed.
import { inspect } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../src/index.js';
import { firstSecretMatch, mayHoldSecret } from '../../src/trace/redact.js';

const SECRET = 'k7Qw9ZpL2xVb8NcR';
const redactor = createRedactor();

// Everything a sink could get out of the value: its JSON text and what a logging callback would print.
function shown(value: unknown): string {
  return `${JSON.stringify(value)}\n${inspect(value, { depth: 50, showHidden: true })}`;
}

describe('JSON text is redacted as the data it encodes', () => {
  it('a tool result or response body given as JSON text loses the values under secret keys', () => {
    const body = JSON.stringify({
      access_token: SECRET,
      client_secret: SECRET,
      headers: { Authorization: `Token ${SECRET}`, 'X-Request-Id': 'req-1' },
      credentials: { user: 'ana', pin: SECRET },
      list: [1, 2],
    });
    const out = redactor.redact({ content: [{ type: 'text', text: body }] });
    expect(shown(out)).not.toContain(SECRET);
    const text = (out as { content: { text: string }[] }).content[0]!.text;
    expect(JSON.parse(text)).toEqual({
      access_token: '[redacted]',
      client_secret: '[redacted]',
      headers: { Authorization: '[redacted]', 'X-Request-Id': 'req-1' },
      credentials: '[redacted]',
      list: [1, 2],
    });
    // Clean JSON text, and strings that only look like JSON, stay exactly as they were.
    const clean = JSON.stringify({ a: 1, b: ['x'] });
    for (const s of [clean, '[redacted:bearer]', '{not json', '[1, 2', '{}'])
      expect(redactor.redact(s)).toBe(s);
  });

  it('a quoted key inside a message loses its value, and the text stays JSON', () => {
    const cases: [string, string][] = [
      [
        `request failed: {"user":"ana","password":"${SECRET} horse"}`,
        'request failed: {"user":"ana","password":"[redacted:assignment]"}',
      ],
      [
        `{"apiKey": "${SECRET}", "n": 1} (truncated`,
        '{"apiKey": "[redacted:assignment]", "n": 1} (truncated',
      ],
      [`body="{\\"token\\":\\"${SECRET}\\"}"`, 'body="{\\"token\\":\\"[redacted:assignment]\\"}"'],
      [`PGPASSWORD='${SECRET}' psql`, "PGPASSWORD='[redacted:assignment]' psql"],
      [`password="${SECRET}`, 'password="[redacted:assignment]'],
    ];
    for (const [input, expected] of cases) expect(redactor.redact(input)).toBe(expected);
  });
});

describe('spellings of secrets the scan missed', () => {
  it('headers, camelCase keys, signed URLs and cookies in text', () => {
    const texts = [
      `X-Api-Key: ${SECRET}`,
      `apiKey=${SECRET}`,
      `ApiKey: ${SECRET}`,
      `SECRET_KEY=${SECRET}`,
      `secretKey: ${SECRET}`,
      `privateKey=${SECRET}`,
      `passphrase=${SECRET}`,
      `https://bucket.s3.amazonaws.com/f?X-Amz-Signature=${SECRET}&X-Amz-Date=1`,
      `https://acct.blob.core.windows.net/c/f?sv=2024&sig=${SECRET}`,
      `Cookie: session=${SECRET}`,
      `redis://:${SECRET}@cache:6379`,
      `-----BEGIN PGP PRIVATE KEY BLOCK-----\n${SECRET}\n-----END PGP PRIVATE KEY BLOCK-----`,
      // A message cut short before the END line.
      `key: -----BEGIN RSA PRIVATE KEY-----\nMIIE${SECRET}`,
    ];
    for (const text of texts) {
      expect(redactor.redact(text), text).not.toContain(SECRET);
      expect(mayHoldSecret(`see ${text}`), text).toBe(true);
    }
  });

  it('the prefilter still passes every string the scan matches, quoted keys included', () => {
    const piece = fc.constantFrom(
      ...['password', 'apiKey', 'Api-Key', 'SECRET_KEY', 'sig', 'Cookie', 'token', 'x', ' ', '"', "'", '\\'],
      ...[
        '\\"',
        ':',
        '=',
        ' : ',
        '\t',
        SECRET,
        '{',
        '}',
        ',',
        'redis://',
        ':pw@',
        '-----BEGIN ',
        'PRIVATE KEY',
      ],
      ...[' BLOCK-----', '-----'],
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (parts) => {
        const s = parts.join('');
        if (!mayHoldSecret(s)) expect(firstSecretMatch(s)).toBeUndefined();
      }),
      { numRuns: 20_000 },
    );
  });
});

describe('labelled pairs and checks', () => {
  it('the value of a header, tag or parameter whose name looks secret is removed', () => {
    const out = redactor.redact({
      har: {
        headers: [
          { name: 'X-Api-Key', value: SECRET },
          { name: 'Accept', value: 'json' },
        ],
      },
      tags: [{ Key: 'db_password', Value: SECRET }],
      ssm: { Parameter: { Name: '/prod/api/token', Value: SECRET, Type: 'SecureString' } },
      form: [{ key: 'client_secret', value: SECRET }],
      // The name of a thing, not of a field: its value stays.
      product: { name: 'Secret Garden (book)', value: 25 },
    });
    expect(shown(out)).not.toContain(SECRET);
    expect(out).toMatchObject({
      har: {
        headers: [
          { name: 'X-Api-Key', value: '[redacted]' },
          { name: 'Accept', value: 'json' },
        ],
      },
      ssm: { Parameter: { Name: '/prod/api/token', Value: '[redacted]', Type: 'SecureString' } },
      product: { name: 'Secret Garden (book)', value: 25 },
    });
  });

  it('a check on a secret field keeps its name and verdict, not the expected and observed values', () => {
    const checks = [
      { name: 'api_key', pass: true, expected: SECRET, observed: SECRET },
      { name: 'status', pass: true, expected: 'active', observed: 'active' },
    ];
    expect(redactor.redact({ checks })).toEqual({
      checks: [
        { name: 'api_key', pass: true, expected: '[redacted]', observed: '[redacted]' },
        { name: 'status', pass: true, expected: 'active', observed: 'active' },
      ],
    });
    // Your own key rules name checks too.
    const custom = createRedactor({ rules: [{ name: 'pin', key: /^pin$/ }] });
    expect(custom.redact([{ name: 'pin', pass: false, expected: 1234, observed: 4321 }])).toEqual([
      { name: 'pin', pass: false, expected: '[redacted:pin]', observed: '[redacted:pin]' },
    ]);
  });
});

describe('values that are not plain data', () => {
  class Connection {
    constructor(
      readonly host: string,
      private readonly url: string,
    ) {}
    toJSON() {
      return { host: this.host, url: this.url };
    }
  }

  it('Maps, Sets, URLs and class instances reach sinks as redacted plain data', () => {
    const value = {
      map: new Map<string, unknown>([
        ['token', SECRET],
        ['region', 'eu'],
      ]),
      set: new Set([`Bearer ${SECRET}`]),
      url: new URL(`postgres://app:${SECRET}@db:5432/app`),
      conn: new Connection('db', `postgres://app:${SECRET}@db/app`),
      at: new Date(0),
      nested: [{ headers: new Map([['authorization', SECRET]]) }],
    };
    const out = redactor.redact(value);
    expect(shown(out)).not.toContain(SECRET);
    expect(out).toEqual({
      map: { token: '[redacted]', region: 'eu' },
      set: ['[redacted:bearer]'],
      url: 'postgres://[redacted:url_credentials]@db:5432/app',
      conn: { host: 'db', url: 'postgres://[redacted:url_credentials]@db/app' },
      at: '1970-01-01T00:00:00.000Z',
      nested: [{ headers: { authorization: '[redacted]' } }],
    });
    // The caller's objects are left as they were.
    expect(value.map.get('token')).toBe(SECRET);
    expect([...value.set]).toEqual([`Bearer ${SECRET}`]);
  });

  it('a toJSON that throws gives a marker, not an exception', () => {
    const bad = {
      toJSON() {
        throw new Error(`cannot print ${SECRET}`);
      },
    };
    Object.setPrototypeOf(bad, { kind: 'model' });
    expect(redactor.redact({ bad, ok: 'yes' })).toEqual({ bad: '[redacted:unreadable]', ok: 'yes' });
  });
});

describe('your own rules', () => {
  it('a sticky value pattern still replaces every match, not only one at the start', () => {
    const r = createRedactor({ rules: [{ name: 'employee', value: /EMP-\d{6}/y }] });
    expect(r.redact('owner EMP-204981 and EMP-777777')).toBe(
      'owner [redacted:employee] and [redacted:employee]',
    );
    const global = /EMP-\d{6}/gy;
    const again = createRedactor({ rules: [{ name: 'employee', value: global }] });
    for (let i = 0; i < 3; i++) expect(again.redact('a EMP-204981')).toBe('a [redacted:employee]');
  });
});

describe('redaction settings are checked when given', () => {
  it('a misspelt option or rule field is an error naming it, not rules dropped in silence', () => {
    expect(() => createRedactor({ rule: [{ name: 'e', value: /EMP-\d+/ }] } as never)).toThrow(
      /trace\.redaction\.rule: is not a redaction option; did you mean "rules"\?/,
    );
    expect(() =>
      createRedactor({ rules: [{ name: 'e', value: /EMP-\d+/, replacement: () => 'x' } as never] }),
    ).toThrow(/trace\.redaction\.rules\[0\]\.replacement: is not a rule field/);
  });

  it('a value pattern that matches empty text is refused', () => {
    expect(() => createRedactor({ rules: [{ name: 'ssn', value: /\d{3}-\d{2}-\d{4}|/ }] })).toThrow(
      /rules\[0\]\.value: must not match empty text/,
    );
  });
});
