import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { shadowToolResult } from '../../src/anthropic/index.js';
import { createRunner, defineAction } from '../../src/index.js';

describe('readback/anthropic at run time (audit)', () => {
  it('a shadow tool whose response holds a bigint or a cycle is answered with its text, not a TypeError', async () => {
    const cyclic: Record<string, unknown> = { ok: true };
    cyclic.self = cyclic;
    for (const response of [{ ok: true, id: 9007199254740993n }, cyclic]) {
      const action = defineAction({
        name: 'insert_row',
        description: 'Inserts a row.',
        input: z.object({ n: z.number() }),
        target: (i) => `row:${i.n}`,
        postcondition: 'The row exists.',
        execute: async () => response,
        observe: async () => ({ exists: true }),
        expect: () => ({ exists: true }),
        shadow: true,
      });
      const runner = createRunner();
      const shadow = await runner.shadow(action, { n: 1 }, { runId: 'r' });
      expect(shadow.executed).toBe(true);
      const block = shadowToolResult('toolu_1', shadow);
      expect(block.is_error).toBe(false);
      expect(block.content[0]?.text).toContain('"ok":true');
    }
    const big = shadowToolResult('toolu_2', {
      executed: true,
      result: { id: 9007199254740993n },
    } as unknown as Parameters<typeof shadowToolResult>[1]);
    expect(big.content[0]?.text).toBe('{"id":"9007199254740993"}');
  });
});
