import { it } from 'vitest';
import { runDemo } from '../../src/cli/demo.js';

it('x', async () => {
  const t = Date.now();
  const r = await runDemo();
  console.log(Date.now() - t, 'ms');
  for (const row of r.rows)
    console.log(
      row.tool,
      row.args,
      '|',
      row.toolReturned,
      '|',
      row.naive,
      '|',
      row.completion.status,
      row.completion.errorCode,
      '\n   ',
      row.completion.message,
    );
  console.log(r.summary);
  console.log(JSON.stringify(r.guard, null, 1));
  console.log(r.gap);
});
