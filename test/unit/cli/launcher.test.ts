import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import module from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchEnv, launchFlags } from '../../../scripts/launch-flags.js';
import { repoRoot } from '../../../scripts/repo-root.js';

const root = `${repoRoot}/`;

describe('the launcher (bin/mailsvc.js)', () => {
  it('sizes V8 young generation as Node.js 20 did, and the old generation, on the line the kernel reads', () => {
    assert.deepEqual(launchFlags(root), ['--max-semi-space-size=16', '--max-old-space-size=384']);
    // Two malloc arenas, and large allocations always given back to the kernel when freed:
    // set before node starts (glibc reads them once).
    assert.deepEqual(launchEnv(root), { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' });
  });

  it('caps the main heap at 384 MB of old generation (V8 grows a heap with a smaller limit less far past what it holds)', () => {
    const limit = Number(
      execFileSync(
        process.execPath,
        [...launchFlags(root), '-p', "require('v8').getHeapStatistics().heap_size_limit"],
        { encoding: 'utf8' },
      ),
    );
    // The limit is the old generation and the young generation's semi-spaces.
    assert.ok(limit >= 384 * 2 ** 20 && limit <= (384 + 3 * 16) * 2 ** 20, `heap limit ${limit}`);
  });

  it('runs when executed itself, as the systemd unit and an npm-installed `mailsvc` run it', () => {
    const out = execFileSync(`${root}bin/mailsvc.js`, ['--version'], {
      encoding: 'utf8',
      env: { PATH: `${process.execPath.replace(/\/node$/, '')}:${process.env.PATH}` },
    });
    assert.match(out.trim(), /^\d+\.\d+\.\d+$/);
    // The settings on the line reach the program (env -S splits the line and sets them).
    const seen = execFileSync(
      '/usr/bin/env',
      [
        '-S',
        `${readFileSync(`${root}bin/mailsvc.js`, 'utf8')
          .split('\n', 1)[0]!
          .replace(/^#!\/usr\/bin\/env -S /, '')} -p process.env.MALLOC_ARENA_MAX+process.env.MALLOC_MMAP_THRESHOLD_`,
      ],
      { encoding: 'utf8', env: { PATH: `${process.execPath.replace(/\/node$/, '')}:${process.env.PATH}` } },
    );
    assert.equal(seen.trim(), '2131072');
  });

  it('gives V8 no more young generation than the option says (Node.js 24 alone grows it to 128 MB)', () => {
    const script =
      "const v8=require('v8');let k=[],most=0;for(let i=0;i<3e6;i++){k.push({a:'x'+i,b:[i]});if(k.length>5e4)k=[];" +
      "if(i%1e5===0)most=Math.max(most,v8.getHeapSpaceStatistics().find((s)=>s.space_name==='new_space').space_size)}console.log(most)";
    const newSpace = Number(execFileSync(process.execPath, [...launchFlags(root), '-e', script], { encoding: 'utf8' }));
    assert.ok(newSpace > 0 && newSpace <= 2 * 16 * 1024 * 1024, `new space ${newSpace}`);
  });

  it(
    'keeps compiled code on disk where Node.js has a compile cache (22.1 and later)',
    {
      skip:
        typeof (module as { enableCompileCache?: unknown }).enableCompileCache === 'function' ? false : 'Node.js 20',
    },
    () => {
      const cache = mkdtempSync(join(tmpdir(), 'mailsvc-compile-cache-'));
      try {
        execFileSync(`${root}bin/mailsvc.js`, ['--version'], {
          encoding: 'utf8',
          env: { PATH: `${process.execPath.replace(/\/node$/, '')}:${process.env.PATH}`, NODE_COMPILE_CACHE: cache },
        });
        const kept = readdirSync(cache, { recursive: true });
        assert.ok(kept.length > 0, 'the cache directory holds the compiled modules');
      } finally {
        rmSync(cache, { recursive: true, force: true });
      }
    },
  );
});
