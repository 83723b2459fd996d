import type { PageOf } from './list-page.js';

/**
 * How a repository turns rows into entities and back (cnpmcore's ModelConvertor). The store
 * keeps JSON as text and booleans as 0/1, so that one schema serves SQLite and PostgreSQL;
 * the rest of the program sees arrays, objects and booleans and never the encoding. Columns
 * stored as they are read (text, numbers, epoch-millisecond timestamps) pass unchanged.
 */

/** One encoded column: its stored form and the value the entity carries. */
export interface Column<Stored, Value> {
  decode(stored: Stored): Value;
  encode(value: Value): Stored;
}

/** A 0/1 integer. */
export const flag: Column<number, boolean> = { decode: (stored) => stored === 1, encode: (value) => (value ? 1 : 0) };

/** A 0/1 integer that may be null (null: a default decided elsewhere). */
export const flagOrNull: Column<number | null, boolean | null> = {
  decode: (stored) => (stored === null ? null : stored === 1),
  encode: (value) => (value === null ? null : value ? 1 : 0),
};

const JSON_TEXT: Column<string, unknown> = {
  decode: (stored) => JSON.parse(stored) as unknown,
  encode: (value) => JSON.stringify(value),
};
const JSON_TEXT_OR_NULL: Column<string | null, unknown> = {
  decode: (stored) => (stored === null ? null : (JSON.parse(stored) as unknown)),
  encode: (value) => (value === null ? null : JSON.stringify(value)),
};

/** JSON text; `T` is what the store wrote there. */
export const json = <T>(): Column<string, T> => JSON_TEXT as Column<string, T>;
/** JSON text or null. */
export const jsonOrNull = <T>(): Column<string | null, T | null> =>
  JSON_TEXT_OR_NULL as Column<string | null, T | null>;

type Columns<Row> = { [K in keyof Row]?: Column<Row[K], any> };
type ValueOf<C> = C extends Column<any, infer V> ? V : never;
type StoredOf<C> = C extends Column<infer S, any> ? S : never;

/** `R` with the columns of `C` decoded. */
type Decoded<R, C> = { [K in keyof R]: K extends keyof C ? ValueOf<C[K]> : R[K] };
/** `E` with the columns of `C` encoded. */
type Encoded<E, C> = { [K in keyof E]: K extends keyof C ? StoredOf<C[K]> : E[K] };

interface RowCodec<Row, C> {
  /**
   * The entity of a row (or of the columns a query selected). Decodes in place: a row fresh
   * from the driver belongs to the repository that read it, and delivery reads thousands a
   * second, so no copy is made. A row is decoded once, where it is read.
   */
  decode<R extends Partial<Row>>(row: R): Decoded<R, C>;
  decodeAll<R extends Partial<Row>>(rows: R[]): Array<Decoded<R, C>>;
  decodePage<R extends Partial<Row>>(page: PageOf<R>): PageOf<Decoded<R, C>>;
  /** The row of an entity, or of the fields a change sets; a new object (the caller keeps its entity). */
  encode<E extends Partial<Decoded<Row, C>>>(entity: E): Encoded<E, C>;
}

/** The entity a codec's rows decode to. */
export type EntityOf<T> = T extends RowCodec<infer Row, infer C> ? Decoded<Row, C> : never;

/** The codec of one table's rows: `rowCodec<Row>()({ column: flag, other: json<T>() })`. */
export const rowCodec =
  <Row>() =>
  <C extends Columns<Row>>(columns: C): RowCodec<Row, C> => {
    const encoded = Object.entries(columns) as Array<[string, Column<unknown, unknown>]>;
    const decode = <R>(row: R) => {
      const fields = row as Record<string, unknown>;
      for (const [name, column] of encoded) if (name in fields) fields[name] = column.decode(fields[name]);
      // eslint-disable-next-line no-restricted-syntax -- the codec's types (Decoded/Encoded) say what decode made of the row
      return row as never;
    };
    return {
      decode,
      decodeAll: (rows) => {
        for (const row of rows) decode(row);
        // eslint-disable-next-line no-restricted-syntax -- as decode
        return rows as never;
      },
      decodePage: (page) => {
        for (const row of page.rows) decode(row);
        // eslint-disable-next-line no-restricted-syntax -- as decode
        return page as never;
      },
      encode: (entity) => {
        const fields: Record<string, unknown> = { ...entity };
        // undefined: a field a change leaves alone (kysely skips it too).
        for (const [name, column] of encoded)
          if (fields[name] !== undefined) fields[name] = column.encode(fields[name]);
        // eslint-disable-next-line no-restricted-syntax -- the codec's types (Decoded/Encoded) say what encode made of the entity
        return fields as never;
      },
    };
  };
