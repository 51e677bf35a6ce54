import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'migrations' ? [] : sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [relative(SRC, path).split(sep).join('/')] : [];
  });
}

/** What each file imports from typeorm and @nestjs/typeorm, by name. */
function typeormNames(text: string): string[] {
  return [...text.matchAll(/import\s+(?:type\s+)?\{([^}]*)\}\s+from\s+'(?:typeorm|@nestjs\/typeorm)'/g)].flatMap((m) =>
    m[1]!.split(',').map((name) => name.trim().replace(/^type\s+/, '')).filter(Boolean),
  );
}

// Not a style preference: a leak of TypeORM past database/ would let a service run a statement on
// its own, outside the repositories, or open a transaction UnitOfWork does not know of (its
// after-commit work would never run). docs/architecture.md, "How to add a statement".
describe('one way to the data (issue #37)', () => {
  const files = sources(SRC).map((path) => ({ path, text: readFileSync(join(SRC, path), 'utf8') }));

  it('has files to look at', () => {
    expect(files.some((f) => f.path.endsWith('.repository.ts'))).toBe(true);
    expect(files.some((f) => f.path === 'database/unit-of-work.ts')).toBe(true);
  });

  it('uses TypeORM only in database/ (the connection) and the entities (the schema): no repository, manager, data source or query builder elsewhere', () => {
    const leaks = files
      .filter((f) => !f.path.startsWith('database/') && !f.path.endsWith('.entity.ts'))
      .flatMap((f) => [
        // A module registers its entities (TypeOrmModule.forFeature): the schema's description, no door to the data.
        ...typeormNames(f.text)
          .filter((name) => !(name === 'TypeOrmModule' && f.path.endsWith('.module.ts')))
          .map((name) => `${f.path} imports ${name}`),
        ...[...f.text.matchAll(/\.(getRepository|createQueryBuilder|transaction)\(/g)].map((m) => `${f.path} calls ${m[1]}()`),
      ]);
    expect(leaks).toEqual([]);
  });

  it('sends every statement of a repository through Sql', () => {
    const repositories = files.filter((f) => f.path.endsWith('.repository.ts'));
    expect(repositories.filter((f) => !/\bthis\.sql\.(rows|count)\b/.test(f.text)).map((f) => f.path)).toEqual([]);
    expect(repositories.filter((f) => /\.query\(/.test(f.text)).map((f) => f.path)).toEqual([]);
  });
});
