#!/usr/bin/env node
// Checks the links of the README and docs/: every relative link leads to a file of the repository,
// and every #anchor to a heading of its page (GitHub's slugs) or an explicit <a id>/<a name>.
// Links to other sites are not fetched. Code (fenced blocks, `inline`) is not read for links.
//
//   node scripts/check-doc-links.mjs                 # README.md and docs/*.md
//   node scripts/check-doc-links.mjs README.md docs/cli.md
//
// Prints one line per broken link (file:line: link — why) and exits 1 if there is any, else 0.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The page's text with code blocks and inline code blanked out (line numbers kept). */
function withoutCode(markdown) {
  let inFence = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        inFence = !inFence;
        return '';
      }
      if (inFence) return '';
      return line.replace(/(`+)[^`]*?\1/g, (code) => ' '.repeat(code.length));
    })
    .join('\n');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2… */
export function slugsOf(markdown) {
  const slugs = new Set();
  const seen = new Map();
  let inFence = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
    if (inFence) continue;
    const heading = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (heading) {
      const text = heading[1]
        .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link's text only
        .replace(/<[^>]+>/g, '');
      const base = text
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
        .replace(/ /g, '-');
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      slugs.add(count ? `${base}-${count}` : base);
    }
    for (const [, id] of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) slugs.add(id);
  }
  return slugs;
}

/** Every inline link and image of a page: [text](target) with its line number. */
function linksOf(markdown) {
  const links = [];
  withoutCode(markdown)
    .split('\n')
    .forEach((line, i) => {
      for (const [, target] of line.matchAll(/!?\[(?:[^\]]|\][^(])*?\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ target, line: i + 1 });
    });
  // A link whose text runs over two lines: "[some\ntext](target)".
  const joined = withoutCode(markdown);
  for (const match of joined.matchAll(/\[[^\]]*\n[^\]]*\]\(\s*<?([^)\s>]+)>?\s*\)/g)) {
    links.push({ target: match[1], line: joined.slice(0, match.index).split('\n').length });
  }
  return links;
}

export function checkFiles(files) {
  const problems = [];
  let checked = 0;
  const slugCache = new Map();
  const slugsFor = (path) => {
    if (!slugCache.has(path)) slugCache.set(path, slugsOf(readFileSync(path, 'utf8')));
    return slugCache.get(path);
  };
  for (const file of files) {
    const path = resolve(ROOT, file);
    for (const { target, line } of linksOf(readFileSync(path, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:…: another site
      checked += 1;
      const [pathPart, anchor] = target.split('#', 2);
      const destination = pathPart ? resolve(dirname(path), decodeURIComponent(pathPart)) : path;
      const where = `${relative(ROOT, path)}:${line}: ${target}`;
      if (!destination.startsWith(ROOT)) {
        problems.push(`${where} — leads out of the repository`);
        continue;
      }
      if (!existsSync(destination)) {
        problems.push(`${where} — no such file`);
        continue;
      }
      if (anchor === undefined) continue;
      if (statSync(destination).isDirectory() || !destination.endsWith('.md')) {
        problems.push(`${where} — an anchor into something that is not a page`);
        continue;
      }
      if (!slugsFor(destination).has(decodeURIComponent(anchor))) problems.push(`${where} — no heading with this anchor in ${relative(ROOT, destination)}`);
    }
  }
  return { problems, checked };
}

const isMain = process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const args = process.argv.slice(2);
  const files = args.length ? args : ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const { problems, checked } = checkFiles(files);
  for (const problem of problems) process.stdout.write(`${problem}\n`);
  if (problems.length) {
    process.stdout.write(`${problems.length} broken link(s) in ${files.length} file(s)\n`);
    process.exit(1);
  }
  process.stdout.write(`${checked} links checked in ${files.length} file(s): all lead somewhere.\n`);
}
