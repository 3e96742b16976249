import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../src/index.js';

describe('redaction rules', () => {
  const redactor = createRedactor();

  it('finds a card number next to other digits, and leaves digit runs inside ids alone', () => {
    const card = '4111 1111 1111 1111';
    const cases: [string, string][] = [
      [`a1 ${card}`, 'a1 [redacted:card_number]'],
      // A leading 0 leaves the Luhn sum as it is, so the whole run passes: redacting more is the safe side.
      [`0 ${card}`, '[redacted:card_number]'],
      [`${card} 22`, '[redacted:card_number] 22'],
      [`12 ${card} 34`, '12 [redacted:card_number] 34'],
      [`pay ${card.replace(/ /g, '-')} now`, 'pay [redacted:card_number] now'],
      [`two: ${card} and 5555 5555 5555 4444.`, 'two: [redacted:card_number] and [redacted:card_number].'],
      ['op_4111111111111111 and 4111111111111111x stay', 'op_4111111111111111 and 4111111111111111x stay'],
    ];
    for (const [input, expected] of cases)
      expect(redactor.redact({ note: input })).toEqual({ note: expected });
  });

  it('removes the values under secret-looking keys, whatever they look like, at any depth', () => {
    const out = redactor.redact({
      user: 'ana',
      password: 'hunter2',
      nested: { headers: { Authorization: 'x', 'X-Api-Key': 'k', Cookie: 'c', accept: 'json' } },
      list: [{ client_secret: 's', refresh_token: 't', cardNumber: 'n', cvv: '123' }],
      // Checks carry `pass`, and an idempotency key is not a secret: both stay.
      checks: [{ name: 'status', pass: true }],
      idempotencyKey: 'run-1:update_ticket:abc',
    });
    expect(out).toEqual({
      user: 'ana',
      password: '[redacted]',
      nested: {
        headers: {
          Authorization: '[redacted]',
          'X-Api-Key': '[redacted]',
          Cookie: '[redacted]',
          accept: 'json',
        },
      },
      list: [
        {
          client_secret: '[redacted]',
          refresh_token: '[redacted]',
          cardNumber: '[redacted]',
          cvv: '[redacted]',
        },
      ],
      checks: [{ name: 'status', pass: true }],
      idempotencyKey: 'run-1:update_ticket:abc',
    });
  });

  it('replaces secret-looking values inside any string, keeping the text around them', () => {
    const cases: [string, string][] = [
      ['auth failed: Bearer abc123DEF456ghi789', 'auth failed: [redacted:bearer]'],
      ['key sk-proj-4f9Kq2LmZx8Vb7Nc6Td5Re3W here', 'key [redacted:api_key] here'],
      ['aws AKIAIOSFODNN7EXAMPLE', 'aws [redacted:aws_key]'],
      ['gh ghp_1234567890abcdefghijklmnopqrstuvwxyzAB', 'gh [redacted:github_token]'],
      ['postgres://admin:pa55word@db:5432/app', 'postgres://[redacted:url_credentials]@db:5432/app'],
      ['connect: password=swordfish99; retry', 'connect: password=[redacted:assignment]; retry'],
      ['card 4111 1111 1111 1111 ok', 'card [redacted:card_number] ok'],
      ['jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghij', 'jwt [redacted:jwt]'],
      ['Authorization: Basic dXNlcjpwYXNzd29yZA==', 'Authorization: [redacted:basic_auth]'],
    ];
    for (const [input, expected] of cases) expect(redactor.redact(input)).toBe(expected);
  });

  it('leaves ordinary text, hashes, timestamps and non-card digit runs alone', () => {
    const plain = [
      'the ticket has the requested status',
      'basic information about the ticket',
      'a3f5c2e1b4d6978812345678901234567890abcdef1234567890abcdef123456',
      '2026-01-01T00:00:10.000Z',
      'order 1234567890123456', // 16 digits that fail the Luhn check
      'tokens used: 1200',
    ];
    for (const text of plain) expect(redactor.redact(text)).toBe(text);
    expect(redactor.redact({ at: 1767225600000, amount: 4111111111111111 })).toEqual({
      at: 1767225600000,
      amount: '[redacted:card_number]',
    });
  });

  it('applies your own key and value rules, on top of the defaults or alone', () => {
    const custom = createRedactor({
      rules: [
        { name: 'employee_id', value: /EMP-\d{6}/ },
        { name: 'internal', key: (key) => key === 'internalNote' },
        { name: 'email', value: /[\w.]+@[\w.]+/, replace: (m) => `${m[0]}***` },
      ],
    });
    expect(
      custom.redact({
        who: 'EMP-204981 and EMP-777777',
        internalNote: { a: 1 },
        to: 'ana@example.com',
        password: 'x',
      }),
    ).toEqual({
      who: '[redacted:employee_id] and [redacted:employee_id]',
      internalNote: '[redacted:internal]',
      to: 'a***',
      password: '[redacted]',
    });
    const only = createRedactor({ defaults: false, rules: [{ name: 'x', value: /secret/ }] });
    expect(only.redact({ password: 'hunter2', note: 'a secret' })).toEqual({
      password: 'hunter2',
      note: 'a [redacted:x]',
    });
  });

  it('never changes its input', () => {
    const input = { password: 'p', note: 'Bearer abc123DEF456ghi789' };
    redactor.redact(input);
    expect(input).toEqual({ password: 'p', note: 'Bearer abc123DEF456ghi789' });
  });

  it('fails closed when your rule throws: what the rule was given is redacted, nothing throws', () => {
    const boom = () => {
      throw new Error('rule failed');
    };
    const r = createRedactor({
      rules: [
        { name: 'bad_key', key: (key) => (key === 'token2' ? boom() : false) },
        { name: 'bad_replace_key', key: /^pin$/, replace: boom },
        { name: 'bad_value', value: /ACME-\d+/, replace: boom },
      ],
    });
    expect(
      r.redact({ token2: 'a', pin: 1234, note: 'order ACME-42 shipped', other: 'kept as it is' }),
    ).toEqual({
      token2: '[redacted:bad_key]',
      pin: '[redacted:bad_replace_key]',
      note: '[redacted:bad_value]',
      other: 'kept as it is',
    });
  });

  it('rejects malformed rules, naming the rule', () => {
    expect(() => createRedactor({ rules: [{ name: '', value: /x/ }] })).toThrow(/rules\[0\]\.name/);
    expect(() => createRedactor({ rules: [{ name: 'a' }] })).toThrow(
      /rules\[0\]: a rule needs a key or a value/,
    );
    expect(() => createRedactor({ rules: [{ name: 'a', value: 'x' as never }] })).toThrow(
      /rules\[0\]\.value/,
    );
  });
});
