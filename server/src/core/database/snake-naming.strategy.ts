import { DefaultNamingStrategy, NamingStrategyInterface } from 'typeorm';

export const snakeCase = (name: string): string => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();

/**
 * snake_case columns, so hand-written SQL (migrations, hot-path queries) needs no quoting and
 * stays valid on PostgreSQL should a server data source be added.
 */
export class SnakeNamingStrategy extends DefaultNamingStrategy implements NamingStrategyInterface {
  override columnName(propertyName: string, customName: string | undefined, prefixes: string[]): string {
    return snakeCase(prefixes.concat(customName ?? propertyName).join('_'));
  }
}
