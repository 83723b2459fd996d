import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../../../scripts/repo-root.js';

/**
 * Only the store speaks SQL and knows how rows are kept (README, How it is built): outside
 * `src/store/` no module imports kysely or the store's row types, builds a query, decodes
 * stored JSON or recognises a unique violation. Repositories hand back entities.
 */

const root = `${repoRoot}/`;

const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? sources(path) : entry.name.endsWith('.ts') ? [relative(root, path)] : [];
  });

const outsideStore = sources(join(root, 'src')).filter((file) => !file.startsWith('src/store/'));

/** JSON.parse of data that was never stored: request bodies, headers, files, tokens, replies of other servers. */
const PARSES_WHAT_IS_NOT_STORED: Record<string, string> = {
  'src/config/load-config.ts': 'the configuration file',
  'src/config/settings.ts': 'a setting given on the command line or in the environment',
  'src/cli/contacts.ts': 'a command-line argument',
  'src/shared/package-version.ts': "the package's package.json",
  'src/cli/workflows.ts': 'a definition file and a payload given on the command line',
  'src/shared/log-format.ts': 'a log line',
  'src/shared/signed-token.ts': "a signed link's payload",
  'src/intake/http/dashboard/session.ts': "the dashboard's sealed cookie",
  'src/intake/http/routes/public/preference-messages.ts': 'the shipped translations of the preference centre',
  'src/receiving/aggregate-reports/parse-aggregate-reports.ts': 'a TLS report received by mail',
  'src/inbox-agent/ask-agent.ts': "the inbox agent's answer",
  'src/shared/chat-completion.ts': "a model endpoint's answer (the inbox agent, template generation)",
  'src/messages/generated-template.ts': "a model's generated template",
  'src/services/marketing/contact-imports/contact-imports.ts': "an upload's multipart fields",
  'src/services/send/prepare-raw.ts': 'the X-Mailsvc-Metadata header of a submitted message',
  'src/messages/client-support.ts': 'the shipped client-support data (config/email-clients/)',
};

interface Rule {
  name: string;
  /** What breaks the rule in a line of source. */
  pattern: RegExp;
  allowed?: Record<string, string>;
}

const RULES: Rule[] = [
  { name: "imports the store's row types", pattern: /from\s+['"][./]*(?:store\/)?tables(?:\.js|\/[\w-]+\.js)['"]/ },
  { name: 'imports kysely', pattern: /from\s+['"]kysely['"]/ },
  {
    name: 'builds SQL',
    pattern:
      /\.(?:selectFrom|insertInto|updateTable|deleteFrom|replaceInto|mergeInto|selectNoFrom)\(|\bsql(?:<[^>]*>)?`/,
  },
  { name: 'parses JSON', pattern: /\bJSON\.parse\(/, allowed: PARSES_WHAT_IS_NOT_STORED },
  { name: 'recognises a unique violation', pattern: /UNIQUE constraint failed|duplicate key value|23505/ },
];

const violations = (rule: Rule): string[] =>
  outsideStore.filter(
    (file) =>
      !rule.allowed?.[file] &&
      readFileSync(join(root, file), 'utf8')
        .split('\n')
        .some((line) => rule.pattern.test(line)),
  );

describe('house rules: only the store speaks SQL', () => {
  for (const rule of RULES) {
    it(`no module outside src/store/ ${rule.name}`, () => {
      assert.deepEqual(violations(rule), []);
    });
  }

  it('allows JSON.parse only in files that still parse something not stored', () => {
    const parsing = outsideStore.filter((file) => /\bJSON\.parse\(/.test(readFileSync(join(root, file), 'utf8')));
    assert.deepEqual(
      Object.keys(PARSES_WHAT_IS_NOT_STORED).filter((file) => !parsing.includes(file)),
      [],
    );
  });

  it('catches what it is meant to catch', () => {
    const breaks = (name: string, line: string) => RULES.find((r) => r.name === name)!.pattern.test(line);
    assert.ok(breaks("imports the store's row types", "import type { Email } from './tables.js';"));
    assert.ok(
      breaks("imports the store's row types", "import type { EmailsTable } from '../../store/tables/emails.js';"),
    );
    assert.ok(!breaks("imports the store's row types", "import { findEmail, type Email } from './emails.js';"));
    assert.ok(breaks('imports kysely', "import { sql } from 'kysely';"));
    assert.ok(breaks('builds SQL', "await trx.selectFrom('subscribers').selectAll()"));
    assert.ok(breaks('builds SQL', 'await sql`select 1`.execute(db);'));
    assert.ok(breaks('builds SQL', 'sql<boolean>`lower(subject)`'));
    assert.ok(!breaks('builds SQL', 'await db.transaction().execute(async (trx) => saveEmail(trx, email));'));
    assert.ok(breaks('parses JSON', 'const to = JSON.parse(e.to_addresses) as string[];'));
  });
});

describe('house rules: the store is repositories over its infrastructure', () => {
  // src/store/infra/ is the machinery every repository stands on (connection, drivers, dialect,
  // migrations, group commit, commit watch, faults); a repository above it may use it, never
  // the other way round, so the machinery can be read and changed without the aggregates.
  const infra = sources(join(root, 'src/store/infra')).filter((file) => !file.includes('/migrations/'));
  /** An import of a module in src/store/ itself (a repository), from src/store/infra/. */
  const repositoryImport = /from\s+['"]\.\.\/(?!tables\b)[\w-]+\.js['"]/;

  it('no module of src/store/infra/ imports a repository', () => {
    assert.ok(infra.length > 10, 'the infrastructure is where this test looks for it');
    assert.deepEqual(
      infra.filter((file) =>
        readFileSync(join(root, file), 'utf8')
          .split('\n')
          .some((line) => repositoryImport.test(line)),
      ),
      [],
    );
  });

  it('catches what it is meant to catch', () => {
    assert.ok(repositoryImport.test("import { refreshEmailStatuses } from '../emails.js';"));
    assert.ok(!repositoryImport.test("import type { Database } from '../tables.js';"));
    assert.ok(!repositoryImport.test("import { classifyFault } from '../../shared/errors.js';"));
    assert.ok(!repositoryImport.test("import type { Dialect } from './dialect.js';"));
  });
});
