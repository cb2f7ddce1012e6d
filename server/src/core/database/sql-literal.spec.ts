import * as sqlite3 from 'sqlite3';

import { bindLiterals, sqlLiteral } from './sql-literal';

function roundTrip(value: unknown): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const db = new sqlite3.Database(':memory:');
    db.exec(`CREATE TABLE t (v); INSERT INTO t (v) VALUES (${sqlLiteral(value)});`, (err) => {
      if (err) {
        reject(err);
        return;
      }
      db.get('SELECT v FROM t', (error, row: { v: unknown }) => {
        db.close();
        if (error) {
          reject(error);
        } else {
          resolve(row.v);
        }
      });
    });
  });
}

describe('sql literals', () => {
  it.each([
    ["it's", "it's"],
    ["'); DROP TABLE t; --", "'); DROP TABLE t; --"],
    ['a\u0000b', 'a\u0000b'],
    ['漢字 and emoji 🚀', '漢字 and emoji 🚀'],
    ['back\\slash "quotes" ? marks', 'back\\slash "quotes" ? marks'],
    ['', ''],
    [42, 42],
    [-1.5, -1.5],
    [true, 1],
    [false, 0],
    [-7, -7],
    [BigInt(-5), -5],
    [null, null],
    [{ nested: ["it's"] }, '{"nested":["it\'s"]}'],
    [Buffer.from([0, 0x27, 0xff, 0x3f]), Buffer.from([0, 0x27, 0xff, 0x3f])],
  ])('stores %j exactly', async (value, stored) => {
    await expect(roundTrip(value)).resolves.toEqual(stored);
  });

  it('refuses values SQLite cannot hold', () => {
    expect(() => sqlLiteral(Number.NaN)).toThrow();
    expect(() => sqlLiteral(Number.POSITIVE_INFINITY)).toThrow();
  });

  it('writes literals PostgreSQL reads the same way', () => {
    expect(sqlLiteral(true)).toBe('TRUE');
    expect(sqlLiteral(false)).toBe('FALSE');
    expect(sqlLiteral(-1)).toBe('(-1)');
  });

  it('never lets a negative number after a minus become a comment', async () => {
    const sql = bindLiterals('SELECT 1 -? AS v', [-1]);
    expect(sql).not.toContain('--');
    const value = await new Promise((resolve, reject) => {
      const db = new sqlite3.Database(':memory:');
      db.get(sql, (err, row: { v: number }) => {
        db.close();
        if (err) {
          reject(err);
        } else {
          resolve(row.v);
        }
      });
    });
    expect(value).toBe(2);
  });

  it('binds placeholders in order and checks their count', () => {
    expect(bindLiterals('UPDATE t SET a = ? WHERE id = ?', ['?', 1])).toBe("UPDATE t SET a = '?' WHERE id = 1");
    expect(() => bindLiterals('SELECT ?', [])).toThrow();
    expect(() => bindLiterals('SELECT 1', [1])).toThrow();
  });
});
