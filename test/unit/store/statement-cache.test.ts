import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { withStatementCache } from '../../../src/store/statement-cache.js';

describe('prepared-statement cache', () => {
  it('hands out the same statement for the same SQL, and a fresh one while it is busy', () => {
    const sqlite = new SQLite(':memory:');
    const db = withStatementCache(sqlite);
    sqlite.exec('create table t (n integer)');
    for (let n = 0; n < 3; n++) db.prepare('insert into t (n) values (?)').run([n]);
    const a = db.prepare('select n from t order by n');
    assert.equal(db.prepare('select n from t order by n'), a);
    const rows = a.iterate([]);
    rows.next(); // `a` is now busy streaming
    const b = db.prepare('select n from t order by n');
    assert.notEqual(b, a);
    assert.deepEqual(b.all([]), [{ n: 0 }, { n: 1 }, { n: 2 }]);
    rows.return?.();
    db.close();
  });

  it('keeps at most `size` statements, dropping the least recently used', () => {
    const sqlite = new SQLite(':memory:');
    const db = withStatementCache(sqlite, 2);
    const one = db.prepare('select 1');
    const two = db.prepare('select 2');
    db.prepare('select 1'); // now the most recent
    db.prepare('select 3'); // evicts "select 2"
    assert.equal(db.prepare('select 1'), one);
    assert.notEqual(db.prepare('select 2'), two, 'evicted, so prepared anew');
    db.close();
  });
});
