import { describe, expect, it } from 'vitest';
import { callbackSink, createRunner, defineAction, memoryStore, type TraceEvent } from '../../src/index.js';
import { anyInput } from '../support/any-input.js';

function liveTool(result: () => unknown) {
  const tool = { runs: 0 };
  const action = defineAction<Record<string, never>, { ok: boolean }>({
    name: 'send',
    description: 'Sends.',
    postcondition: 'It was sent.',
    input: anyInput as never,
    target: () => 'mail:1',
    execute: async () => {
      tool.runs++;
      return result();
    },
    observe: async () => ({ ok: true }),
    expect: () => ({ ok: true }),
    shadow: true,
  });
  return { tool, action };
}

function traced(store = memoryStore()) {
  const events: TraceEvent[] = [];
  const runner = createRunner({
    store,
    trace: {
      sinks: [
        callbackSink((e) => {
          events.push(e);
        }),
      ],
    },
  });
  const completion = () => events.find((e) => e.type === 'completion') as Record<string, unknown> | undefined;
  return { runner, events, completion };
}

describe('the completion event says what the live tool claimed', () => {
  it('a shadow call whose store failed before the tool ran: the tool ran and claimed failure', async () => {
    const { tool, action } = liveTool(() => ({ ok: false, error: 'mailbox full' }));
    const down = {
      ...memoryStore(),
      reserve: () => Promise.reject(new Error('SQLITE_IOERR: disk I/O error')),
    };
    const { runner, completion } = traced(down);
    const out = await runner.shadow(action, {}, { runId: 'r' });
    expect(tool.runs).toBe(1);
    expect(out.completion.shadow?.claimed).toBe('failure');
    // The event agrees with the completion it carries: the tool ran in this call and said it failed.
    expect(completion()).toMatchObject({ claimed: 'failure', status: 'unknown' });
    expect((completion()?.shadow as { claimed?: string }).claimed).toBe('failure');
  });

  it('a poll of a shadow record claims nothing: the tool did not run in that call', async () => {
    const { tool, action } = liveTool(() => ({ ok: true }));
    const store = memoryStore();
    const first = traced(store);
    const out = await first.runner.shadow(action, {}, { runId: 'r' });
    expect(first.completion()).toMatchObject({ claimed: 'success' });
    const later = traced(store);
    const polled = await createRunner({
      store,
      actions: [action],
      trace: {
        sinks: [
          callbackSink((e) => {
            later.events.push(e);
          }),
        ],
      },
    }).poll(out.completion.operationId);
    expect(tool.runs).toBe(1);
    expect(polled.shadow?.claimed).toBe('success');
    expect(later.completion()).toMatchObject({ claimed: 'none' });
  });
});
