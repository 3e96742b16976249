// `npm run example:openai-agents`: an OpenAI Agents SDK agent (`@openai/agents` 0.20) whose two
// helpdesk tools (update_ticket, send_email) run through readback, driven by the SDK's own
// ScriptedModel instead of a real model. It prints what the model saw for each tool call and the final
// answer after readback's output guardrail. Offline: fakes on a fake clock, no keys, tracing disabled.
//
// It imports the built package (`npm run build` first), as an installed `readback/openai-agents` would be.
import { Agent, OutputGuardrailTripwireTriggered, Runner, setTracingDisabled } from '@openai/agents';
import { assistantMessage, functionCall, ScriptedModel } from '@openai/agents-core/testing';
import { createRunner, guardAnswer } from '../dist/index.js';
import { agentTools, completionGuardrail } from '../dist/openai-agents/index.js';
import { createHelpdesk } from '../dist/testing/index.js';

// Importing @openai/agents installs the OpenAI trace exporter; this example must not phone home.
setTracingDisabled(true);
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

const email = { to: 'ana@example.com', subject: 'Your proposal', body: 'Attached, as discussed.' };
const naive = 'Done! I resolved T-104 and T-105 and sent the proposal to Ana.';
// What a model tends to do: three tool calls in one turn, then a cheerful summary.
const model = new ScriptedModel([
  [
    functionCall('update_ticket', { id: 'T-104', status: 'resolved' }, { callId: 'call-1' }),
    functionCall('update_ticket', { id: 'T-105', status: 'resolved' }, { callId: 'call-2' }),
    functionCall('send_email', email, { callId: 'call-3' }),
  ],
  [assistantMessage(naive)],
]);
const agent = new Agent({
  name: 'helpdesk',
  instructions: 'Resolve tickets and email customers. Report only what the tool results say.',
  model,
  tools: agentTools(runner, [hd.actions.updateTicket, hd.actions.sendEmail], { scope: { tenant: 'acme' } }),
  outputGuardrails: [completionGuardrail(runner)],
});

out('readback + OpenAI Agents SDK: Agent, Runner and ScriptedModel, tools wrapped by agentTools');
let finalAnswer;
let info;
try {
  const result = await new Runner({ tracingDisabled: true }).run(
    agent,
    'Resolve T-104 and T-105, then email Ana the proposal.',
  );
  finalAnswer = result.finalOutput;
} catch (error) {
  if (!(error instanceof OutputGuardrailTripwireTriggered)) throw error;
  info = error.result.output.outputInfo;
  finalAnswer = info.honestAnswer;
}

// What the model was shown: the function_call_result items in its second request.
out();
out('What the model saw (function_call_result items):');
const shown = model.calls[1].request.input;
const calls = new Map(shown.filter((i) => i.type === 'function_call').map((i) => [i.callId, i]));
for (const item of shown) {
  if (item.type !== 'function_call_result') continue;
  const call = calls.get(item.callId);
  out(`  ${item.name} ${call?.arguments ?? ''}`);
  out(`    → ${typeof item.output === 'string' ? item.output : item.output.text}`);
}

out();
out('Final answer, guarded (completionGuardrail):');
out(`  model: "${naive}"`);
if (info) {
  out('    → rejected by the output guardrail (OutputGuardrailTripwireTriggered):');
  for (const v of info.violations) out(`      ✗ ${v.detail}`);
  out('  shown instead (outputInfo.honestAnswer):');
  for (const line of finalAnswer.split('\n')) out(`    ${line}`);
} else {
  out('    → accepted');
}
out();
out(`Ground truth: T-104 ${(await hd.tickets.get('T-104'))?.status}, email ${hd.mail.messages[0]?.status}.`);

// The example doubles as a smoke check: the naive answer must trip, and the honest one must pass the guard.
const completions = await Promise.all(
  (info?.completions ?? []).map(async (c) => (await runner.store.get(c.operationId))?.completion),
);
if (!info || !guardAnswer(finalAnswer, completions).ok) {
  out('unexpected guard verdicts');
  process.exitCode = 1;
}
