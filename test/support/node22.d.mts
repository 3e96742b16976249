/** The npm package Node 22 is fetched from, at an exact version. */
export const NODE22_PACKAGE: string;
/** Node 22's folder and binary, fetched once into node_modules/.cache; or why it cannot be had here. */
export function fetchNode22(): Promise<{ home: string; bin: string } | { why: string }>;
