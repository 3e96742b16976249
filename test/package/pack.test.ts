// The package as a consumer gets it: today's sources built into a staging folder (the shared dist is left alone),
// packed by npm, installed into an empty project with none of the optional peers, and used through its entry points
// (pack-probe.mjs runs there). Installing needs the npm registry (or npm's cache) for `yaml`, the one dependency:
// without it the test fails under CI=true and is skipped elsewhere, saying why.
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { repo } from '../support/compile.mjs';

const run = promisify(execFile);
const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
  version: string;
  files: string[];
  bin: Record<string, string>;
  exports: Record<string, string | { types: string; import: string }>;
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};
const root = mkdtempSync(join(tmpdir(), 'readback-pack-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Builds, packs and installs the package; the project it went into and the tarball's files, or why not. */
async function packAndInstall(): Promise<{ app: string; files: string[] } | { why: string }> {
  const staging = join(root, 'staging');
  mkdirSync(staging);
  const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');
  const config = join(repo, 'tsconfig.build.json');
  await run(process.execPath, [tsc, '-p', config, '--outDir', join(staging, 'dist')], { cwd: repo });
  for (const file of ['package.json', ...pkg.files.filter((f) => f !== 'dist')]) {
    cpSync(join(repo, file), join(staging, file));
  }
  const packed = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', root], {
    cwd: staging,
  });
  const [tarball] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
  const app = join(root, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), '{ "name": "probe-app", "private": true, "type": "module" }\n');
  try {
    const args = ['install', '--no-audit', '--no-fund', '--prefer-offline', join(root, tarball!.filename)];
    await run('npm', args, { cwd: app, timeout: 180_000 });
  } catch (error) {
    return { why: `npm install of the packed tarball failed: ${(error as Error).message.split('\n')[0]}` };
  }
  cpSync(join(repo, 'test', 'package', 'pack-probe.mjs'), join(app, 'probe.mjs'));
  return { app, files: tarball!.files.map((f) => f.path) };
}

const installed = await packAndInstall();
if ('why' in installed) {
  if (process.env.CI === 'true') throw new Error(`${installed.why}; under CI=true the package test must run`);
  console.warn(`[readback] skipping the package test: ${installed.why}`);
}
const { app, files } = installed as { app: string; files: string[] };
const probe = async (mode: 'root' | 'all') =>
  JSON.parse((await run(process.execPath, ['probe.mjs', mode], { cwd: app })).stdout);

describe.skipIf('why' in installed)('the packed package, installed with no optional peers', () => {
  it('ships every entry point the exports map names with its types, and the bin; nothing but dist, README, LICENSE', () => {
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      const paths = typeof target === 'string' ? [target] : [target.types, target.import];
      for (const path of paths) expect(files, `${subpath}: ${path}`).toContain(path.replace(/^\.\//, ''));
    }
    for (const bin of Object.values(pkg.bin)) expect(files).toContain(bin.replace(/^\.\//, ''));
    expect(
      files.filter((f) => !/^dist\//.test(f) && !['package.json', 'README.md', 'LICENSE'].includes(f)),
    ).toEqual([]);
  });

  it('the root entry runs a committed action to verified with every dependency hidden', async () => {
    // The root export has no runtime dependency: with the installed ones moved away it still loads and runs.
    const hidden = Object.keys(pkg.dependencies).map((name) => join(app, 'node_modules', name));
    for (const dir of hidden) renameSync(dir, `${dir}.hidden`);
    try {
      const report = await probe('root');
      expect(report).toMatchObject({ status: 'verified', row: 'done' });
      expect(report.exports).toEqual(expect.arrayContaining(['createRunner', 'defineAction', 'memoryStore']));
    } finally {
      for (const dir of hidden) renameSync(`${dir}.hidden`, dir);
    }
  });

  it('each subpath loads, or fails naming the optional peer it needs; the stores say what to install', async () => {
    const report = await probe('all');
    // The stores and the testing kit load without their drivers, which are loaded only when used.
    for (const name of ['testing', 'sqlite', 'postgres'])
      expect(report.subpaths[name].exports.length).toBeGreaterThan(0);
    for (const [name, result] of Object.entries(report.subpaths) as [
      string,
      { code?: string; message?: string },
    ][]) {
      if (!result.code) continue;
      expect({ name, code: result.code }).toEqual({ name, code: 'ERR_MODULE_NOT_FOUND' });
      const missing = /Cannot find package '([^']+)'/.exec(result.message ?? '')?.[1];
      expect(Object.keys(pkg.peerDependencies), `${name} needs ${missing}`).toContain(missing);
    }
    expect(report.sqlite).toMatchObject({ code: 'invalid_options' });
    expect(report.sqlite.message).toContain('npm install better-sqlite3@12');
    expect(report.postgres).toMatchObject({ code: 'invalid_options' });
    expect(report.postgres.message).toContain('npm install pg@8');
  });

  it('the readback bin runs', async () => {
    const bin = join(app, 'node_modules', '.bin', 'readback');
    expect((await run(bin, ['--version'], { cwd: app })).stdout.trim()).toBe(pkg.version);
  });
});
