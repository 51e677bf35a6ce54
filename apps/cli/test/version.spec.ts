import { readFile } from 'node:fs/promises';
import { VERSION } from '../src/version.js';

it('reports the package version', async () => {
  const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'));
  expect(VERSION).toBe(pkg.version);
});
