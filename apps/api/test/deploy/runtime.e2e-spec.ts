import { readFile } from 'node:fs/promises';

const ROOT = new URL('../../../../', import.meta.url);
const read = (path: string) => readFile(new URL(path, ROOT), 'utf8');
const enginesOf = async (path: string) => (JSON.parse(await read(path)) as { engines?: { node?: string } }).engines?.node;

/**
 * The Node the image ships, the lines `engines` accepts, the line CI runs on besides the machine's,
 * and the README's word for them say the same (issue #49: the image and engines still named Node
 * 20 after its end of life).
 */
describe('the supported Node runtime', () => {
  it('ships one Node line in both stages of the image, and CI runs its second pass on that line', async () => {
    const dockerfile = await read('apps/api/Dockerfile');
    const stages = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(stages).toHaveLength(2);
    expect(new Set(stages.map((image) => image!.replace(/ AS .*/, '')))).toEqual(new Set(['node:24-bookworm-slim']));
    expect(await read('.ci/run')).toContain('node24_package=${CI_NODE24_PACKAGE:-node@24}');
  });

  it('accepts the same lines in every workspace, the shipped one among them, and type-checks against the oldest', async () => {
    const engines = await Promise.all(['package.json', 'apps/api/package.json', 'apps/cli/package.json'].map(enginesOf));
    expect(engines).toEqual(['^20.19 || ^22.12 || >=24', '^20.19 || ^22.12 || >=24', '^20.19 || ^22.12 || >=24']);
    // A newer Node's API used by mistake fails the build on the oldest line engines allows.
    const root = JSON.parse(await read('package.json')) as { devDependencies: Record<string, string> };
    expect(root.devDependencies['@types/node']).toMatch(/^\^20\.19\./);
  });

  it('says so in the README', async () => {
    const readme = await read('README.md');
    expect(readme).toContain('Node 24 (the image\'s), 22.12+ or 20.19+ and npm are all you need');
  });
});
