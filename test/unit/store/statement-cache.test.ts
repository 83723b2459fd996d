import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CommitWatch } from '../../../src/store/infra/commit-watch.js';
import { STATEMENT_CACHE_BYTES, withStatementCache } from '../../../src/store/infra/db.js';
import { SQLite } from '../../../src/store/infra/sqlite-driver.js';

/**
 * SQLite's prepared statements are kept by SQL text, bounded by the text's bytes (a prepared
 * statement holds 25-100 times its text), the least recently used dropped first.
 */
describe('the SQLite statement cache', () => {
  const open = () => {
    const sqlite = new SQLite(':memory:');
    sqlite.exec('create table t (id text primary key, v integer)');
    return withStatementCache(sqlite, { statements: 0 }, null, new CommitWatch().connection());
  };
  /** An `IN` list of `n` ids: one statement per length, as kysely writes them. */
  const inList = (n: number) => `select id from t where id in (${Array(n).fill('?').join(', ')})`;

  it('hands back the statement prepared for the same text', () => {
    const cache = open();
    const a = cache.prepare('select id from t where v = ?');
    assert.equal(cache.prepare('select id from t where v = ?'), a);
    assert.notEqual(cache.prepare('select id from t where v > ?'), a);
    cache.close();
  });

  it('keeps at most its bound of SQL text, dropping the least recently used', () => {
    const cache = open();
    const hot = cache.prepare('select v from t where id = ?');
    const prepared = new Map<number, unknown>();
    let bytes = 'select v from t where id = ?'.length;
    let n = 1;
    // Up to the bound: everything is kept.
    while (bytes + inList(n).length <= STATEMENT_CACHE_BYTES) {
      prepared.set(n, cache.prepare(inList(n)));
      bytes += inList(n).length;
      n++;
      // The hot statement is used all along.
      assert.equal(cache.prepare('select v from t where id = ?'), hot);
    }
    assert.ok(n > 100, `${n - 1} lists fit`);
    assert.equal(cache.prepare(inList(1)), prepared.get(1), 'at the bound, the oldest is still kept');
    // One more: the least recently used go (the short lists from 2 on, until the longest
    // fits), not the list of 1 (just used), the hot one, or the recent long lists.
    cache.prepare(inList(n));
    assert.equal(cache.prepare('select v from t where id = ?'), hot, 'the hot statement stays');
    assert.equal(cache.prepare(inList(1)), prepared.get(1), 'the recently used one stays');
    assert.equal(cache.prepare(inList(n - 1)), prepared.get(n - 1), 'the last one before stays');
    assert.notEqual(cache.prepare(inList(2)), prepared.get(2), 'the least recently used was dropped');
    cache.close();
  });

  it('does not keep a statement longer than an eighth of its bound', () => {
    const cache = open();
    const long = inList(Math.ceil(STATEMENT_CACHE_BYTES / 8 / 3) + 10);
    assert.ok(long.length > STATEMENT_CACHE_BYTES / 8);
    const small = cache.prepare('select v from t where id = ?');
    assert.notEqual(cache.prepare(long), cache.prepare(long), 'prepared each time');
    assert.equal(cache.prepare('select v from t where id = ?'), small, 'and it pushed nothing out');
    cache.close();
  });
});
