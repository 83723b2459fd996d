import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { SQLite } from '../../../src/store/infra/sqlite-driver.js';
import { repoRoot } from '../../../scripts/repo-root.js';

const root = `${repoRoot}/`;
const major = Number(process.versions.node.split('.')[0]);

describe('better-sqlite3, in the major this Node.js runs safely', () => {
  it(`loads ${major >= 22 ? '13 (Node-API)' : '12'} on Node ${major}`, () => {
    const db = new SQLite(':memory:');
    const version = (db.prepare('select sqlite_version() as v').get() as { v: string }).v;
    db.close();
    assert.match(version, /^3\./);
    const loaded = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        "import('./src/store/infra/sqlite-driver.ts').then(() => console.log(Object.keys(require.cache).find((k) => /better-sqlite3(-napi)?[\\\\/]package\\.json$|better-sqlite3(-napi)?[\\\\/]lib[\\\\/]index\\.js$/.test(k))))",
      ],
      { cwd: root, encoding: 'utf8' },
    );
    assert.match(
      loaded.stdout,
      major >= 22 ? /better-sqlite3-napi/ : /node_modules[\\/]better-sqlite3[\\/]/,
      loaded.stdout + loaded.stderr,
    );
  });

  it('a process and a worker thread that leave thousands of statements to the collector exit cleanly', () => {
    // On Node 24 with better-sqlite3 12, a statement collected where no environment is current
    // aborted the process (exit 134) at exit or in the middle of work.
    const script = `
      const { Worker, isMainThread } = require('node:worker_threads');
      const work = async () => {
        const { SQLite } = await import(${JSON.stringify(join(root, 'src/store/infra/sqlite-driver.ts'))});
        const db = new SQLite(':memory:');
        db.exec('create table t (a)');
        for (let i = 0; i < 5000; i++) db.prepare('insert into t values (' + i + ')').run();
        global.gc?.();
      };
      if (isMainThread) {
        work().then(() => new Promise((resolve, reject) => {
          const w = new Worker(__filename);
          w.on('exit', (code) => (code === 0 ? resolve() : reject(new Error('worker exited ' + code))));
          w.on('error', reject);
        })).then(() => console.log('done'));
      } else import('tsx/esm/api').then((tsx) => { tsx.register(); return work(); });
    `;
    const file = join(root, 'test/unit/store/.collect-statements.cjs');
    writeFileSync(file, script);
    try {
      const run = spawnSync(process.execPath, ['--import', 'tsx', '--expose-gc', file], {
        cwd: root,
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(run.status, 0, `exit ${run.status} ${run.signal ?? ''}: ${run.stderr.slice(-1500)}`);
      assert.match(run.stdout, /done/);
    } finally {
      rmSync(file, { force: true });
    }
  });

  // Two copies of SQLite in one process do not see each other's locks.
  it('is the one place that loads better-sqlite3', () => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
      );
    const offenders = ['src', 'test', 'bench', 'scripts']
      .flatMap((d) => files(join(root, d)))
      .filter(
        (f) =>
          !f.endsWith('src/store/infra/sqlite-driver.ts') &&
          !f.endsWith('sqlite-driver.test.ts') &&
          /['"]better-sqlite3(-napi)?['"]/.test(readFileSync(f, 'utf8')),
      )
      .map((f) => relative(root, f));
    assert.deepEqual(offenders, []);
  });
});
