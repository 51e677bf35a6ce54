import { execFile } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const REPOSITORY = fileURLToPath(new URL('../../../..', import.meta.url));
const CHECK_LINKS = fileURLToPath(new URL('../../../../scripts/check-doc-links.mjs', import.meta.url));

/** GitHub's anchor for a heading, as scripts/check-doc-links.mjs computes it. */
const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');

/** The README a newcomer reads in five minutes, and the docs/ pages it leads to (issue #36). */
describe('README.md and docs/', () => {
  it('every relative link of the README and docs/ leads to a file, and every anchor to a heading (scripts/check-doc-links.mjs)', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [CHECK_LINKS], { cwd: REPOSITORY, timeout: 30_000 }).catch(
      (err: { stdout: string; code: number }) => ({ stdout: `exit ${err.code}\n${err.stdout}` }),
    );
    expect(stdout).toMatch(/^\d+ links checked in \d+ file\(s\): all lead somewhere\.\n$/);
  });

  it('the link checker finds what is broken: a missing page, a missing anchor, a link split over two lines; not what is in code', async () => {
    const { checkFiles } = (await import(CHECK_LINKS)) as { checkFiles(files: string[]): { problems: string[]; checked: number } };
    const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
    const dir = await mkdtemp(`${REPOSITORY}/docs/.links-probe-`);
    try {
      await writeFile(
        `${dir}/probe.md`,
        [
          '# Probe',
          '## The `server`’s clock: OAuth 2.0 (issue #21)',
          '[fine](#the-servers-clock-oauth-20-issue-21) [gone](#nowhere) [no page](missing.md) [fine too](../cli.md#exit-codes)',
          '`[code](not-a-link.md)` [split',
          'over lines](../cli.md#no-such-heading) [elsewhere](https://example.com/x)',
          '```',
          '[fenced](not-a-link-either.md)',
          '```',
        ].join('\n'),
      );
      const { problems, checked } = checkFiles([`${dir}/probe.md`]);
      expect(checked).toBe(5);
      expect(problems.map((p) => p.replace(/^.*probe\.md:/, ''))).toEqual([
        `3: #nowhere — no heading with this anchor in ${dir.slice(REPOSITORY.length + 1)}/probe.md`,
        '3: missing.md — no such file',
        '4: ../cli.md#no-such-heading — no heading with this anchor in docs/cli.md',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the README is short (≤ 250 lines), opens with a table of contents of its own sections, and links every docs/ page', async () => {
    const readme = await readFile(`${REPOSITORY}/README.md`, 'utf8');
    expect(readme.split('\n').length).toBeLessThanOrEqual(250);
    const sections = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1]!).filter((s) => s !== 'Contents');
    const contents = /^## Contents\n((?:- .+\n)+)/m.exec(readme)![1]!;
    expect([...contents.matchAll(/\(#([^)]+)\)/g)].map((m) => m[1])).toEqual(sections.map(slug));
    for (const page of (await readdir(`${REPOSITORY}/docs`)).filter((f) => f.endsWith('.md'))) {
      expect(readme).toContain(`](docs/${page})`);
    }
    // The pages being written alongside are linked whether or not they exist yet.
    expect(readme).toContain('](docs/oauth.md)');
    expect(readme).toContain('](docs/federation.md)');
  });

  it('says how to run one workspace and one file', async () => {
    const readme = await readFile(`${REPOSITORY}/README.md`, 'utf8');
    expect(readme).toContain('npm test -w @prospect/api');
    expect(readme).toMatch(/TEST_DATABASE_URL=\S+ \\\n\s+node --experimental-vm-modules \S+ \.\.\/\.\.\/node_modules\/jest\/bin\/jest\.js test\/\S+\.e2e-spec\.ts/);
  });
});
