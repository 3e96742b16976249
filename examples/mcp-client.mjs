// `npm run example:mcp`: a scripted MCP client (the SDK's own Client over stdio) that starts
// examples/mcp-server.mjs as a child process, makes the tool calls a model would make, prints what the
// model is shown for each, and guards the final answer. Offline: fakes on a fake clock, no keys.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { guardAnswer, summarize } from 'readback';

const here = dirname(fileURLToPath(import.meta.url));
const transport = new StdioClientTransport({
  command: process.execPath,
  // One-shot fault: the mail provider accepts the next email and then drops it.
  args: [join(here, 'mcp-server.mjs'), '--drop-next-email'],
  stderr: 'pipe',
});
let serverLog = '';
transport.stderr?.on('data', (chunk) => {
  serverLog += chunk;
});
const client = new Client({ name: 'readback-example-client', version: '0.1.0' });
await client.connect(transport);

const out = (line = '') => process.stdout.write(`${line}\n`);
out('readback MCP example: the SDK Client talks to examples/mcp-server.mjs over stdio');
out();
const { tools } = await client.listTools();
out('tools/list:');
for (const tool of tools) {
  const hints = tool.annotations ?? {};
  out(`  ${tool.name}: ${tool.description?.split('\n')[0]}`);
  out(
    `    idempotentHint ${hints.idempotentHint}, destructiveHint ${hints.destructiveHint}, outputSchema: ${tool.outputSchema ? 'the Completion' : 'none'}`,
  );
}

const calls = [
  { name: 'update_ticket', arguments: { id: 'T-104', status: 'resolved' }, note: 'a clean write' },
  { name: 'update_ticket', arguments: { id: 'T-105', status: 'resolved' }, note: 'already resolved' },
  {
    name: 'send_email',
    arguments: { to: 'ana@example.com', subject: 'Your proposal', body: 'Attached, as discussed.' },
    note: 'fault: queued, then dropped by the provider',
  },
];
const completions = [];
for (const { note, ...call } of calls) {
  const result = await client.callTool(call);
  const text = result.content.map((item) => (item.type === 'text' ? item.text : `[${item.type}]`)).join(' ');
  completions.push(result.structuredContent);
  out();
  out(`${call.name} ${JSON.stringify(call.arguments)}  (${note})`);
  out(`  isError: ${result.isError}   structuredContent.status: ${result.structuredContent?.status}`);
  out(`  model sees: ${text}`);
}
await client.close();

const naive = 'Done! I resolved T-104 and T-105 and sent the proposal to Ana.';
const honest = summarize(completions);
out();
out('Final answer, guarded (guardAnswer):');
const naiveVerdict = guardAnswer(naive, completions);
out(`  naive: "${naive}"`);
out(`    → ${naiveVerdict.ok ? 'accepted' : 'rejected'}`);
for (const v of naiveVerdict.violations) out(`      ✗ ${v.detail}`);
const honestVerdict = guardAnswer(honest, completions);
out('  honest (summarize):');
for (const line of honest.split('\n')) out(`    ${line}`);
out(`    → ${honestVerdict.ok ? 'accepted' : 'rejected'}`);
out();
out('Server log (stderr):');
for (const line of serverLog.trimEnd().split('\n')) out(`  ${line}`);
// The example doubles as a smoke check: the naive answer must be rejected and the honest one accepted.
if (naiveVerdict.ok || !honestVerdict.ok) {
  out('unexpected guard verdicts');
  process.exitCode = 1;
}
