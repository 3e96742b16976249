// A message override that says the effect happened for an unresolved status is an authoring mistake (`readback
// audit` reports it). At run time the default message takes its place; the author used to never hear of it.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createRunner, defineAction } from '../../src/index.js';
import { createHelpdesk } from '../../src/testing/index.js';
import { anyInput } from '../support/any-input.js';

function action(messages: Record<string, (d: { target: string }) => string>) {
  return defineAction<{ id: string }, { id: string; status: string }>({
    name: 'close_ticket',
    description: 'Closes a ticket.',
    postcondition: 'The ticket reads back closed.',
    input: anyInput as never,
    target: (i) => `ticket:${i.id}`,
    execute: async () => ({ ok: true }),
    observe: async (i) => ({ id: i.id, status: 'open' }),
    expect: () => ({ status: 'closed' }),
    messages: messages as never,
  });
}

afterEach(() => vi.restoreAllMocks());

describe('message overrides', () => {
  it('one that claims the effect is refused at run time, and its author warned once per action and status', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const sneaky = action({
      failed: (d) => (d.target === 'ticket:T-9' ? 'The ticket was closed.' : 'Not closed.'),
    });
    const runner = createRunner({ clock: createHelpdesk().clock });
    for (let i = 0; i < 2; i++) {
      const c = await runner.run(sneaky, { id: 'T-9' }, { runId: 'r' });
      expect(c.status).toBe('failed');
      expect(c.message).not.toMatch(/was closed/);
    }
    const ours = warn.mock.calls.filter(([, type]) => (type as unknown) === 'ReadbackMessageWarning');
    expect(ours).toHaveLength(1);
    expect(String(ours[0]?.[0])).toMatch(/close_ticket.*failed message override claims completion/);
  });
});
