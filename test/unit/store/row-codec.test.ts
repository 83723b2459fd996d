import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { flag, flagOrNull, json, jsonOrNull, rowCodec } from '../../../src/store/infra/row-codec.js';

interface Row {
  id: string;
  test: number;
  tracking: number | null;
  to: string;
  tags: string | null;
  created_at: number;
}

const codec = rowCodec<Row>()({ test: flag, tracking: flagOrNull, to: json<string[]>(), tags: jsonOrNull<string[]>() });

describe('row codec', () => {
  it('decodes 0/1 and JSON text; other columns pass unchanged', () => {
    const row: Row = {
      id: 'a',
      test: 1,
      tracking: null,
      to: '["x@example.org"]',
      tags: null,
      created_at: 1_700_000_000_000,
    };
    assert.deepEqual(codec.decode(row), {
      id: 'a',
      test: true,
      tracking: null,
      to: ['x@example.org'],
      tags: null,
      created_at: 1_700_000_000_000,
    });
    const other = codec.decode({ id: 'b', test: 0, tracking: 0, to: '[]', tags: '["t"]', created_at: 0 });
    assert.equal(other.test, false);
    assert.equal(other.tracking, false);
    assert.deepEqual(other.tags, ['t']);
  });

  it('decodes in place: the row read is the entity, no copy', () => {
    const row: Row = { id: 'a', test: 0, tracking: 1, to: '[]', tags: null, created_at: 0 };
    const entity = codec.decode(row);
    assert.equal(entity, row);
    const rows: Row[] = [{ id: 'b', test: 1, tracking: null, to: '[]', tags: null, created_at: 0 }];
    assert.equal(codec.decodeAll(rows), rows);
  });

  it('decodes only the columns a query selected', () => {
    const partial = codec.decode({ id: 'a', tags: '["x"]' });
    assert.deepEqual(partial, { id: 'a', tags: ['x'] });
    assert.equal('test' in partial, false);
  });

  it('decodes every row of a page and keeps whether more follow', () => {
    const page = codec.decodePage({ rows: [{ id: 'a', test: 1 }], more: true });
    assert.deepEqual(page, { rows: [{ id: 'a', test: true }], more: true });
  });

  it('encodes into a new object and leaves the entity alone', () => {
    const entity = { id: 'a', test: true, tracking: null, to: ['x@example.org'], tags: ['a', 'b'], created_at: 5 };
    const row = codec.encode(entity);
    assert.deepEqual(row, {
      id: 'a',
      test: 1,
      tracking: null,
      to: '["x@example.org"]',
      tags: '["a","b"]',
      created_at: 5,
    });
    assert.notEqual(row, entity);
    assert.deepEqual(entity.to, ['x@example.org']);
  });

  it('encodes a change: only the fields it sets, undefined left out', () => {
    assert.deepEqual(codec.encode({ tracking: false, tags: undefined }), { tracking: 0, tags: undefined });
    assert.deepEqual(codec.encode({ tags: null }), { tags: null });
  });

  it('round-trips: decode(encode(e)) is e', () => {
    const entity = { id: 'a', test: false, tracking: true, to: ['"Ann" <a@example.org>'], tags: null, created_at: 1 };
    assert.deepEqual(codec.decode(codec.encode(entity) as Row), entity);
  });
});
