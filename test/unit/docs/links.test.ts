import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../../../scripts/repo-root.js';

const root = repoRoot;
const documents = ['README.md', 'config/examples/README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchor = (heading: string) => heading.trim().toLowerCase().replace(/`/g, '').replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
const anchorsOf = (file: string) => new Set(readFileSync(file, 'utf8').split('\n').filter((l) => /^#{1,6} /.test(l)).map((l) => anchor(l.replace(/^#+ /, ''))));

describe('links between the documents', () => {
  it('lead to files that exist and headings that exist', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const doc of documents) {
      const text = readFileSync(join(root, doc), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, hash] = target!.split('#') as [string, string | undefined];
        const file = path === '' ? join(root, doc) : join(root, dirname(doc), path);
        checked++;
        if (!existsSync(file)) broken.push(`${doc}: ${target} (no such file)`);
        else if (hash && file.endsWith('.md') && !anchorsOf(file).has(hash)) broken.push(`${doc}: ${target} (no such heading)`);
      }
    }
    assert.ok(checked > 50, `only ${checked} links found`);
    assert.deepEqual(broken, []);
  });
});
