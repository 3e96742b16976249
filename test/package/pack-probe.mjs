// Run by pack.test.ts inside a fresh project that installed the packed readback tarball and nothing else: what a
// consumer gets from each entry point. `root` (argv[2]) checks only the root entry, with every dependency hidden;
// `all` checks the rest. Prints one JSON line.
const mode = process.argv[2];
const failure = (error) => ({ code: error.code, message: String(error.message).split('\n')[0] });

if (mode === 'root') {
  const readback = await import('readback');
  const rows = new Map();
  const action = readback.defineAction({
    name: 'set_status',
    description: 'Sets a row status',
    input: { '~standard': { version: 1, vendor: 'probe', validate: (value) => ({ value }) } },
    target: (input) => `row:${input.id}`,
    postcondition: 'The row has the requested status.',
    execute: async (input) => {
      rows.set(input.id, input.status);
      return { ok: true };
    },
    observe: async (input) => (rows.has(input.id) ? { status: rows.get(input.id) } : null),
    expect: (input) => ({ status: input.status }),
  });
  const runner = readback.createRunner({ store: readback.memoryStore() });
  const completion = await runner.run(action, { id: 'a', status: 'done' }, { runId: 'probe' });
  console.log(
    JSON.stringify({ exports: Object.keys(readback).sort(), status: completion.status, row: rows.get('a') }),
  );
} else {
  const subpaths = {};
  for (const name of [
    'testing',
    'sqlite',
    'postgres',
    'mcp',
    'ai-sdk',
    'openai-agents',
    'anthropic',
    'otel',
  ]) {
    try {
      subpaths[name] = { exports: Object.keys(await import(`readback/${name}`)).sort() };
    } catch (error) {
      subpaths[name] = failure(error);
    }
  }
  const { sqliteStore } = await import('readback/sqlite');
  const { postgresStore } = await import('readback/postgres');
  const sqlite = await sqliteStore({ path: 'ops.db' }).then(() => 'opened', failure);
  const postgres = await postgresStore({ connectionString: 'postgres://probe@127.0.0.1:1/probe' }).then(
    () => 'opened',
    failure,
  );
  console.log(JSON.stringify({ subpaths, sqlite, postgres }));
}
