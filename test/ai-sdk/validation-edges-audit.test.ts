// Edge cases of readback validating the model's arguments by default: the tool listing must stay exactly what the
// AI SDK derives from the schema itself, and arguments the SDK would have refused must reach readback and be recorded.
import { asSchema, generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { type } from 'arktype';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { aiTool, completionsOf } from '../../src/ai-sdk/index.js';
import { callbackSink, createRunner, type TraceEvent } from '../../src/index.js';
import type { StandardSchemaV1 } from '../../src/schema.js';
import { assignTicket, oneTicket } from '../support/helpdesk.js';
import { answerStep } from './support.js';

type AssignInput = StandardSchemaV1<unknown, { id: string; assignee: string }>;
const scope = { tenant: 'acme' };
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** A model whose first step calls assign_ticket once per raw input text, then answers. */
function calling(inputs: string[]): MockLanguageModelV3 {
  const calls = inputs.map((input, i) => ({
    type: 'tool-call' as const,
    toolCallId: `c${i}`,
    toolName: 'assign_ticket',
    input,
  }));
  return new MockLanguageModelV3({
    doGenerate: [
      { content: calls, finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] },
      answerStep('done'),
    ],
  });
}

/** Runs one generateText over an assign_ticket tool with `schema`; returns what the model and the record saw. */
async function run(schema: AssignInput, inputs: string[], inputValidation?: 'sdk') {
  const { clock, tickets } = oneTicket();
  const events: TraceEvent[] = [];
  const runner = createRunner({ clock, trace: { sinks: [callbackSink((e) => void events.push(e))] } });
  const model = calling(inputs);
  const tool = aiTool(runner, assignTicket(tickets, schema), {
    scope,
    ...(inputValidation ? { inputValidation } : {}),
  });
  const result = await generateText({
    model,
    tools: { assign_ticket: tool },
    stopWhen: stepCountIs(3),
    prompt: 'x',
  });
  const listed = model.doGenerateCalls[0]?.tools?.[0];
  return {
    result,
    events,
    tickets,
    listed: listed && 'inputSchema' in listed ? listed.inputSchema : undefined,
  };
}

const valid = JSON.stringify({ id: 'T-1', assignee: 'ana' });

describe('readback/ai-sdk input validation, edge cases (audit)', () => {
  it('an ArkType schema is listed exactly as the SDK lists it itself (objects closed), whoever validates', async () => {
    const schema = type({ id: 'string', assignee: 'string > 0', 'meta?': { note: 'string' } });
    const own = await asSchema(schema).jsonSchema;
    expect(own).toMatchObject({ additionalProperties: false });
    for (const via of [undefined, 'sdk'] as const) {
      const { listed, result } = await run(schema, [valid], via);
      expect(listed).toStrictEqual(own);
      expect(completionsOf(result).map((c) => c.status)).toEqual(['verified']);
    }
  });

  it('zod: defaults, optional/nullable, nested, record, enum, descriptions, strict/loose, pipes and non-object roots list as the SDK derives them', async () => {
    const base = { id: z.string().describe('ticket id'), assignee: z.string().meta({ title: 'Who' }) };
    const schemas = [
      z.object({
        ...base,
        note: z.string().optional(),
        due: z.string().nullable(),
        n: z.number().default(1),
      }),
      z.object({
        ...base,
        tags: z.array(z.object({ k: z.enum(['a', 'b']) })),
        labels: z.record(z.string(), z.number()),
      }),
      z.strictObject(base),
      z.looseObject(base).describe('an assignment'),
      z.object(base).catchall(z.number()),
      z.object({ ...base, assignee: z.string().pipe(z.transform((s) => s.trim())) }),
      z.object({ id: z.coerce.string(), assignee: z.string() }),
      z.object(base).partial(),
      z.discriminatedUnion('k', [z.object({ k: z.literal('a'), ...base }), z.object({ k: z.literal('b') })]),
    ];
    for (const schema of schemas) {
      const { listed } = await run(schema as unknown as AssignInput, [valid]);
      expect(listed).toStrictEqual(await asSchema(schema as z.ZodType).jsonSchema);
    }
  });

  it('arguments that are not an object (null, an array, a string) reach readback: recorded invalid, the model is told, nothing runs', async () => {
    const schema = z.object({ id: z.string(), assignee: z.string() });
    const { result, events, tickets } = await run(schema, ['null', '[1,2]', '"T-1"']);
    expect(completionsOf(result)).toEqual([
      expect.objectContaining({ errorCode: 'invalid_input', reason: expect.stringMatching(/received null/) }),
      expect.objectContaining({
        errorCode: 'invalid_input',
        reason: expect.stringMatching(/received array/),
      }),
      expect.objectContaining({
        errorCode: 'invalid_input',
        reason: expect.stringMatching(/received string/),
      }),
    ]);
    expect(events.filter((e) => e.type === 'tool.selected').map((e) => e.valid)).toEqual([
      false,
      false,
      false,
    ]);
    expect(result.steps[0]?.content.some((part) => part.type === 'tool-error')).toBe(false);
    expect(tickets.writes).toEqual([]);
  });

  it('a transform runs once (the SDK no longer parses first), and identical concurrent calls share one write', async () => {
    const schema = z.object({ id: z.string(), assignee: z.string().transform((s) => `${s}!`) });
    const { result, tickets } = await run(schema, [valid, valid]);
    const [first, second] = completionsOf(result);
    expect(first?.status).toBe('verified');
    expect(second?.operationId).toBe(first?.operationId);
    expect(tickets.writes).toHaveLength(1);
    expect((await tickets.get('T-1'))?.assignee).toBe('ana!');
  });
});
