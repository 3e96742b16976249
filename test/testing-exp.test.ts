import { it, expect } from 'vitest';
import { setup, ctx } from './runner/support.js';

it('accepted verifier down then recover', async () => {
  const { hd, runner } = setup();
  const send = hd.mail.send.bind(hd.mail);
  hd.mail.send = async (...a) => { const r = await send(...a); hd.mail.faults.readerDown = true; return r; };
  const c = await runner.run(hd.actions.sendEmail, { to: 'a@example.com', subject: 's', body: 'b' }, ctx);
  console.log(c.status, c.errorCode, c.nextAllowedAction, c.reason);
  hd.mail.faults.readerDown = false;
  const p = await runner.poll(c.operationId);
  console.log(p.status, p.errorCode, hd.mail.inbox('a@example.com').length, hd.mail.calls.filter(x=>x.method==='lookup').length);
  const p2 = await runner.poll(c.operationId, { wait: true });
  console.log(p2.status, p2.errorCode, hd.mail.calls.filter(x=>x.method==='lookup').length);
});
it('committed denied', async () => {
  const { hd, runner } = setup();
  const u = hd.tickets.update.bind(hd.tickets);
  hd.tickets.update = async (...a) => { const r = await u(...a); hd.tickets.faults.readerDenied = true; return r; };
  const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
  console.log(c.status, c.errorCode, c.nextAllowedAction, c.message);
});
