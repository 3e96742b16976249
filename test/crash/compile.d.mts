/** Compiles the crash child and its imports; `child` is the compiled entry, `dir` the folder to remove. */
export function compileCrashChild(): Promise<{ child: string; dir: string }>;
