import { describe, expect, it } from 'vitest';
import { guardAnswer, summarize } from '../../src/index.js';
import { ctx, setup } from './support.js';

describe('no tool call', () => {
  it('a claim with no completion behind it is flagged, and nothing happened in the system', async () => {
    const { hd, runner } = setup();
    // The model answered without calling any tool.
    const completions: never[] = [];
    const answer = 'I resolved ticket T-104 and emailed Ana the proposal.';

    expect(hd.tickets.calls).toEqual([]);
    expect(hd.mail.calls).toEqual([]);
    expect(await runner.store.list()).toEqual([]);
    expect((await hd.tickets.get('T-104'))?.status).toBe('open');
    expect(hd.mail.inbox('ana@example.com')).toEqual([]);

    const verdict = guardAnswer(answer, completions);
    expect(verdict.ok).toBe(false);
    expect(verdict.violations.map((v) => v.kind)).toEqual(['no_completion', 'no_completion']);
    expect(guardAnswer(summarize(completions), completions).ok).toBe(true);
  });

  it('a claim about an action that never ran is flagged even when other actions ran', async () => {
    const { hd, runner } = setup();
    const c = await runner.run(hd.actions.updateTicket, { id: 'T-104', status: 'resolved' }, ctx);
    expect(c.status).toBe('verified');

    const verdict = guardAnswer('Ticket T-104 is resolved and I refunded order 42.', [c]);
    expect(verdict.violations).toHaveLength(1);
    expect(verdict.violations[0]).toMatchObject({ kind: 'no_completion', claim: 'refunded' });
    expect(hd.ledger.calls).toEqual([]);
    expect(hd.ledger.entries()).toEqual([]);
  });
});
