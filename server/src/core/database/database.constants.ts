/** Name of the read-only TypeORM data source (a second connection on the same SQLite file). */
export const READER_DATA_SOURCE = 'reader';
