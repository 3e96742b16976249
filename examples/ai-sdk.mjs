// `npm run example:ai-sdk`: a Vercel AI SDK (`ai` 6) `generateText` loop whose two helpdesk tools
// (update_ticket, send_email) run through readback, driven by the SDK's own MockLanguageModelV3
// instead of a real model. It prints what the model saw for each tool call and the final answer after
// readback's check. Offline: fakes on a fake clock, no keys.
//
// It imports the built package (`npm run build` first), as an installed `readback/ai-sdk` would be.
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { aiTools, checkAnswer, completionsOf } from '../dist/ai-sdk/index.js';
import { createRunner, summarize } from '../dist/index.js';
import { createHelpdesk } from '../dist/testing/index.js';

const out = (line = '') => process.stdout.write(`${line}\n`);

const hd = createHelpdesk();
hd.tickets.seed([
  { id: 'T-104', tenant: 'acme' },
  { id: 'T-105', tenant: 'acme', status: 'resolved' },
]);
// One-shot fault: the mail provider accepts the next email (a 200 with a message id), then drops it.
hd.mail.faults.nextOutcome = 'dropped';
// The runner shares the fakes' clock, so waiting for the email's delivery takes no real time.
const runner = createRunner({ clock: hd.clock });

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
};
const call = (toolCallId, toolName, input) => ({
  type: 'tool-call',
  toolCallId,
  toolName,
  input: JSON.stringify(input),
});
const email = { to: 'ana@example.com', subject: 'Your proposal', body: 'Attached, as discussed.' };
const naive = 'Done! I resolved T-104 and T-105 and sent the proposal to Ana.';
// What a model tends to do: three tool calls in one step, then a cheerful summary.
const model = new MockLanguageModelV3({
  doGenerate: [
    {
      content: [
        call('call-1', 'update_ticket', { id: 'T-104', status: 'resolved' }),
        call('call-2', 'update_ticket', { id: 'T-105', status: 'resolved' }),
        call('call-3', 'send_email', email),
      ],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage,
      warnings: [],
    },
    {
      content: [{ type: 'text', text: naive }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage,
      warnings: [],
    },
  ],
});

out('readback + Vercel AI SDK: generateText with MockLanguageModelV3, tools wrapped by aiTools');
const result = await generateText({
  model,
  tools: aiTools(runner, [hd.actions.updateTicket, hd.actions.sendEmail], { scope: { tenant: 'acme' } }),
  stopWhen: stepCountIs(4),
  prompt: 'Resolve T-104 and T-105, then email Ana the proposal.',
});

// What the model was shown: the tool-result parts in the prompt of its second call (via toModelOutput).
out();
out('What the model saw (tool-result parts):');
const prompt = model.doGenerateCalls[1].prompt;
const inputs = new Map(
  prompt
    .flatMap((m) => (m.role === 'assistant' ? m.content : []))
    .flatMap((p) => (p.type === 'tool-call' ? [[p.toolCallId, p.input]] : [])),
);
for (const part of prompt.flatMap((m) => (m.role === 'tool' ? m.content : []))) {
  if (part.type !== 'tool-result') continue;
  out(`  ${part.toolName} ${JSON.stringify(inputs.get(part.toolCallId))}`);
  out(`    → (${part.output.type}) ${part.output.value}`);
}

const completions = completionsOf(result);
const verdict = checkAnswer(result.text, completions);
const finalAnswer = verdict.ok ? result.text : summarize(completions);
out();
out('Final answer, guarded (checkAnswer):');
out(`  model: "${result.text}"`);
out(`    → ${verdict.ok ? 'accepted' : 'rejected'}`);
for (const v of verdict.violations) out(`      ✗ ${v.detail}`);
if (!verdict.ok) {
  out('  shown instead (summarize):');
  for (const line of finalAnswer.split('\n')) out(`    ${line}`);
}
out();
out(`Ground truth: T-104 ${(await hd.tickets.get('T-104'))?.status}, email ${hd.mail.messages[0]?.status}.`);

// The example doubles as a smoke check: the naive answer must be rejected and the honest one accepted.
if (verdict.ok || !checkAnswer(finalAnswer, completions).ok) {
  out('unexpected guard verdicts');
  process.exitCode = 1;
}
