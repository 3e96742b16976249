#!/usr/bin/env node
// A real stdio MCP server exposing two helpdesk actions (update_ticket, send_email) through readback.
// Every tool call runs through a readback runner: the tool executes, readback reads the state back,
// and the model is shown the status it verified (as text and as structuredContent), never the raw 200.
//
// The systems behind the tools are readback's built-in fakes (readback/testing), in memory and on a
// fake clock, so the server runs offline with no keys. Seeded tickets: T-104 (open), T-105 (already
// resolved, so resolving it again is a no_op), T-106 (open).
//
// It runs from the built package (`npm run build` first) and imports readback by its own name, the way
// your server would. Point Claude Desktop or any MCP client at `node examples/mcp-server.mjs`.
//
// Flags, to see readback catch a lie (each fault is one-shot):
//   --drop-next-email   the provider accepts the next email, then drops it   → send_email: failed
//   --stuck-next-email  the next email stays queued past the poll budget     → send_email: unknown
//   --fail-next-write   the next ticket write answers ok but changes nothing → update_ticket: failed
//
// stdout carries the protocol; everything this file logs goes to stderr.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createRunner } from 'readback';
import { registerActions } from 'readback/mcp';
import { createHelpdesk } from 'readback/testing';

const log = (...args) => console.error('[readback-helpdesk]', ...args);
const flags = new Set(process.argv.slice(2));

const hd = createHelpdesk();
hd.tickets.seed([
  { id: 'T-104', tenant: 'acme' },
  { id: 'T-105', tenant: 'acme', status: 'resolved' },
  { id: 'T-106', tenant: 'acme' },
]);
if (flags.has('--drop-next-email')) hd.mail.faults.nextOutcome = 'dropped';
if (flags.has('--stuck-next-email')) hd.mail.faults.nextOutcome = 'stuck';
if (flags.has('--fail-next-write')) hd.tickets.faults.softFailNextWrite = true;

// The runner shares the fakes' clock, so waiting for the email's delivery takes no real time.
const runner = createRunner({ clock: hd.clock });
// Log each settled call, so whoever watches stderr sees what the model was told.
const logged = {
  ...runner,
  async run(action, input, ctx) {
    const c = await runner.run(action, input, ctx);
    log(`${action.name} ${JSON.stringify(input)} → ${c.status}${c.errorCode ? ` (${c.errorCode})` : ''}`);
    return c;
  },
};
const server = new McpServer({ name: 'readback-helpdesk', version: '0.1.0' });
registerActions(server, logged, [hd.actions.updateTicket, hd.actions.sendEmail], {
  scope: { tenant: 'acme' },
});

await server.connect(new StdioServerTransport());
log(
  `serving update_ticket and send_email over stdio (tickets T-104 open, T-105 resolved, T-106 open;` +
    ` ${[...flags].join(' ') || 'no faults armed'})`,
);
