import * as fs from 'node:fs';
import * as path from 'node:path';

import { getMetadataArgsStorage } from 'typeorm';

import { ENTITIES } from '../core.module';

const SERVER = path.resolve(__dirname, '../..');

/** Source files outside the persistence layer: everything but repositories, entities, migrations and the unit of work itself. */
function serviceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      return file === path.join(SERVER, 'core', 'database') ? [] : serviceFiles(file);
    }
    return /\.ts$/.test(entry.name) && !/\.(spec|repository|entity)\.ts$/.test(entry.name) ? [file] : [];
  });
}

/**
 * docs/architecture.md#the-store: only a repository names its tables and columns; a service changes another
 * feature's rows through that feature's repository or service. What this checks is the code,
 * not a convention: a query, a staged statement or a table name in a service fails it.
 */
describe('repository boundary', () => {
  const tables = getMetadataArgsStorage()
    .tables.filter((table) => ENTITIES.includes(table.target as (typeof ENTITIES)[number]))
    .map((table) => table.name as string);
  const files = serviceFiles(SERVER);

  it('finds the entity tables and the services to check', () => {
    expect(tables).toEqual(
      expect.arrayContaining(['requirement', 'agent_session', 'agent_run', 'manager_event', 'agent_trigger_receipt']),
    );
    expect(files.length).toBeGreaterThan(50);
  });

  it('leaves queries and staged statements to repositories', () => {
    const offences = files.flatMap((file) =>
      fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .map((line, i) => ({ line, where: `${path.relative(SERVER, file)}:${i + 1}` }))
        .filter(({ line }) =>
          /createQueryBuilder\(|\.query[<(]|\b(tx|uow)\.(insert|insertAtCommit|update|delete|execute)\(|\.(findOne|findOneBy|findOneByOrFail|findBy|find|exists|count)\(\w+Entity\b|\.read\(\w+Entity\)/.test(
            line,
          ),
        )
        .map(({ where }) => where),
    );
    expect(offences).toEqual([]);
  });

  it('names no table outside repositories', () => {
    // SQL that names a table (a bare 'requirement' is also an ID prefix or an event payload key).
    const named = new RegExp(`\\b(?:FROM|INTO|UPDATE|JOIN|TABLE)\\s+(?:${tables.join('|')})\\b`, 'i');
    const offences = files.flatMap((file) =>
      fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) => (named.test(line) ? [`${path.relative(SERVER, file)}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(offences).toEqual([]);
  });

  /** Every `file:line` of `among` whose line matches `pattern`. */
  const linesMatching = (among: string[], pattern: RegExp) =>
    among.flatMap((file) =>
      fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) => (pattern.test(line) ? [`${path.relative(SERVER, file)}:${i + 1}: ${line.trim()}`] : [])),
    );

  it('leaves entity managers and the read manager to repositories and core/database', () => {
    // A service reads through a repository's methods; how they reach the database is theirs.
    expect(linesMatching(files, /\bEntityManager\b|\breadManager\b/)).toEqual([]);
  });

  it('lets only RequirementLifecycle write the Requirement aggregate (issue 27 §1)', () => {
    // Other features ask by intent (RequirementLifecycle) and read through RequirementsService:
    // the Requirement's repository is not theirs to inject, and its change calls are made in one file.
    const requirementsFolder = path.join(SERVER, 'requirements') + path.sep;
    const outside = files.filter((file) => !file.startsWith(requirementsFolder));
    expect(linesMatching(outside, /\bRequirementsRepository\b/)).toEqual([]);
    const writers = files.filter((file) => file !== path.join(SERVER, 'requirements', 'requirement-lifecycle.ts'));
    expect(
      linesMatching(writers, /\.(changeRequirement|changeSession)\(|\brepository\.(insert|delete)\(/).filter((hit) =>
        hit.startsWith('requirements/'),
      ),
    ).toEqual([]);
    expect(linesMatching(outside, /\.(changeRequirement|changeSession)\(/)).toEqual([]);
  });
});
