/** A Standard Schema that accepts any value as it is, for test actions whose input validation is not the point. */
export const anyInput = {
  '~standard': { version: 1 as const, vendor: 'test', validate: (value: unknown) => ({ value }) },
};
