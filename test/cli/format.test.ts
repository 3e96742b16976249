import { describe, expect, it } from 'vitest';
import { printable } from '../../src/cli/format.js';

describe('printable', () => {
  it('puts free text on one line with control characters escaped, and leaves other text alone', () => {
    expect(printable('a\nstatus  verified\r\t\u001b[31m\u2028z')).toBe(
      'a\\nstatus  verified\\r\\t\\u001b[31m\\u2028z',
    );
    expect(printable('Zoë’s note — ok ✓')).toBe('Zoë’s note — ok ✓');
  });
});
