import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { aiTools } from '../../src/ai-sdk/index.js';
import { helpdesk } from '../support/helpdesk.js';
import { answerStep, callStep, shownOnSecondCall } from './support.js';

describe('readback/ai-sdk error paths (audit)', () => {
  it('a scope option that throws: the model is told nothing ran, not the raw error; the developer keeps it as cause', async () => {
    const { hd, runner } = helpdesk();
    const refusal = new Error('no tenant for user u-17 (lookup table tenants_v2 missing)');
    const model = new MockLanguageModelV3({
      doGenerate: [callStep('update_ticket', { id: 'T-104', status: 'resolved' }), answerStep('ok')],
    });
    const result = await generateText({
      model,
      tools: aiTools(runner, [hd.actions.updateTicket], {
        scope: () => {
          throw refusal;
        },
      }),
      stopWhen: stepCountIs(3),
      prompt: 'Resolve T-104.',
    });
    const shown = shownOnSecondCall(model) as { type: string; value: string };
    expect(shown.type).toBe('error-text');
    expect(shown.value).toMatch(/^\[not executed\]/);
    expect(shown.value).toContain('Changing the arguments will not help.');
    expect(shown.value).not.toContain('tenants_v2');
    // Nothing ran or was recorded, and the option's own error is still there for the developer.
    expect(hd.tickets.writes).toEqual([]);
    expect(await runner.store.list()).toEqual([]);
    const toolError = result.steps[0]?.content.find((part) => part.type === 'tool-error');
    expect((toolError as { error?: { cause?: unknown } } | undefined)?.error?.cause).toBe(refusal);
  });
});
