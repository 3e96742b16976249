import { describe, expect, it } from 'vitest';
import { defineAction } from '../../src/contract/define.js';
import { ReadbackError } from '../../src/errors.js';
import { schema } from '../../src/testing/schema.js';

const base = {
  name: 'touch_row',
  description: 'Touch a row.',
  input: schema({ id: 'string' }),
  target: ({ id }: { id: string }) => `row:${id}`,
  postcondition: 'The row reads back touched.',
  execute: () => undefined,
  observe: () => ({ touched: true }),
  expect: () => ({ touched: true }),
};

describe('the optional `system` contract field', () => {
  it('is kept on the action when it names a system', () => {
    expect(defineAction({ ...base, system: 'orders database (primary)' }).system).toBe(
      'orders database (primary)',
    );
    expect(defineAction(base).system).toBeUndefined();
  });

  it.each([[''], ['   '], [42]])('rejects %j, naming the field', (system) => {
    let error: unknown;
    try {
      defineAction({ ...base, system: system as string });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ReadbackError);
    expect(error).toMatchObject({ code: 'invalid_contract', field: 'action "touch_row".system' });
  });
});
