/** The repository root. */
export const repo: string;
/** Compiles `entries` (paths relative to the repo) and their imports; resolves to the output folder. */
export function compileSources(entries: string[], tag: string): Promise<string>;
