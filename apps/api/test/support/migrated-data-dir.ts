import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAIN_JS } from './api-process.js';

const MIGRATIONS = fileURLToPath(new URL('../../dist/database/migrations', import.meta.url));
const PGLITE_PACKAGE = fileURLToPath(new URL('../../../../node_modules/@electric-sql/pglite/package.json', import.meta.url));

/**
 * Copies into `dir` an embedded data directory that is already created and migrated, for a test
 * of `npm start`'s process that is not about its first start (a 408, SIGTERM under load, kill -9,
 * the data directory's lock). A first start runs initdb and every migration in WebAssembly, about
 * 6–10 s here, once per test otherwise; tests of the first start itself (test/process/) keep an
 * empty directory.
 *
 * The template is made by the product's own `main.js migrate --embedded`, once per set of
 * migrations and PGlite version (their hash names it), and kept in the temporary directory.
 * Jest's two workers may both make it at once: each builds in a directory of its own and renames
 * it into place, and the loser's copy is thrown away.
 */
export async function copyMigratedDataDir(dir: string): Promise<string> {
  await cp(await template(), dir, { recursive: true });
  return dir;
}

async function template(): Promise<string> {
  const hash = createHash('sha256');
  for (const name of (await readdir(MIGRATIONS)).filter((n) => n.endsWith('.js')).sort()) hash.update(name).update(await readFile(join(MIGRATIONS, name)));
  hash.update(JSON.parse(await readFile(PGLITE_PACKAGE, 'utf8')).version);
  const path = join(tmpdir(), `prospect-embedded-template-${hash.digest('hex').slice(0, 16)}`);
  if (await stat(path).then(() => true, () => false)) return path;

  const building = `${path}.building-${process.pid}`;
  await rm(building, { recursive: true, force: true });
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN_JS, 'migrate', '--embedded'], {
      env: { PATH: process.env.PATH, PROSPECT_DATA_DIR: building },
      stdio: 'ignore',
      timeout: 60_000,
    });
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`main.js migrate --embedded exited with ${code} while making ${path}`);
  await rename(building, path).catch(async (error: NodeJS.ErrnoException) => {
    await rm(building, { recursive: true, force: true });
    // Another worker put its template in place first: the same migrations, so the same template.
    if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
  });
  return path;
}
