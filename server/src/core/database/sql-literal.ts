/**
 * SQL literals for the staged write script (see SqliteUnitOfWork). node-sqlite3 can bind
 * parameters only to one statement at a time, and every statement costs a round trip to its
 * thread pool, so a batch's writes are sent as one script of literal statements. Values are
 * encoded here and nowhere else; statement templates only ever come from our own code.
 *
 * Every literal is one that PostgreSQL reads the same way (docs/architecture.md#the-store): `TRUE`/`FALSE`,
 * standard-quoted strings, and negative numbers in parentheses, so that no template can turn
 * one into a comment (`1 -?` with -1 must not read `1 --1`).
 */
export function sqlLiteral(value: unknown): string {
  if (value === null || value === undefined) {
    return 'NULL';
  }
  if (typeof value === 'boolean') {
    return value ? 'TRUE' : 'FALSE';
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) {
      throw new Error(`cannot write ${value} to SQLite`);
    }
    return signed(String(value));
  }
  if (typeof value === 'bigint') {
    return signed(value.toString());
  }
  if (typeof value === 'string') {
    // A NUL would end the C string the script is passed as: such text goes as UTF-8 bytes.
    return value.includes('\u0000')
      ? `CAST(X'${Buffer.from(value, 'utf8').toString('hex')}' AS TEXT)`
      : `'${value.replace(/'/g, "''")}'`;
  }
  if (value instanceof Date) {
    return sqlLiteral(value.toISOString());
  }
  if (Buffer.isBuffer(value)) {
    // Bytes (an attachment's content) as a blob literal; on PostgreSQL they are bound as bytea.
    return `X'${value.toString('hex')}'`;
  }
  return sqlLiteral(JSON.stringify(value));
}

/** `-1` as `(-1)`: whatever precedes the placeholder, the minus never meets another one. */
function signed(digits: string): string {
  return digits.startsWith('-') ? `(${digits})` : digits;
}

/** Replaces each `?` of a statement template with the literal of the next parameter. */
export function bindLiterals(template: string, params: readonly unknown[]): string {
  let index = 0;
  const sql = template.replace(/\?/g, () => {
    if (index >= params.length) {
      throw new Error(`statement has more placeholders than parameters: ${template}`);
    }
    return sqlLiteral(params[index++]);
  });
  if (index !== params.length) {
    throw new Error(`statement has fewer placeholders than parameters: ${template}`);
  }
  return sql;
}
