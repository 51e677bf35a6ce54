import { failedCondition, globMatches } from './claim-conditions.js';

describe('a federation’s claim conditions', () => {
  it('`*` matches any run of characters, `/` included, and nothing else is special', () => {
    expect(globMatches('repo:acme/api:ref:refs/heads/main', 'repo:acme/api:ref:refs/heads/main')).toBe(true);
    expect(globMatches('repo:acme/api:ref:refs/heads/main', 'repo:acme/api:ref:refs/heads/mainx')).toBe(false);
    expect(globMatches('repo:acme/api:*', 'repo:acme/api:ref:refs/heads/feature/x')).toBe(true);
    expect(globMatches('repo:acme/*', 'repo:acme/api:environment:prod')).toBe(true);
    expect(globMatches('repo:acme/*', 'repo:acme-evil/api:ref:refs/heads/main')).toBe(false);
    expect(globMatches('*', '')).toBe(true);
    expect(globMatches('a*b*c', 'abc')).toBe(true);
    expect(globMatches('a*b*c', 'a/x/b/y/c')).toBe(true);
    expect(globMatches('a*b*c', 'acb')).toBe(false);
    // Regular expressions' and other globs' syntax is literal.
    expect(globMatches('v1.0', 'v1x0')).toBe(false);
    expect(globMatches('v1.0', 'v1.0')).toBe(true);
    expect(globMatches('ref?', 'refs')).toBe(false);
    expect(globMatches('ref?', 'ref?')).toBe(true);
    expect(globMatches('[ab]', 'a')).toBe(false);
    expect(globMatches('(a|b)+', '(a|b)+')).toBe(true);
    expect(globMatches('a\\*', 'a\\anything')).toBe(true);
    // Anchored at both ends, across lines too.
    expect(globMatches('main', 'xmain')).toBe(false);
    expect(globMatches('main', 'main\n')).toBe(false);
    expect(globMatches('a*', 'a\nb')).toBe(true);
  });

  it('names the first failing condition by claim name; an absent or structured claim fails', () => {
    const conditions = { sub: 'repo:acme/api:*', repository: 'acme/api', ref: 'refs/heads/main' };
    const claims = { sub: 'repo:acme/api:ref:refs/heads/main', repository: 'acme/api', ref: 'refs/heads/main' };
    expect(failedCondition(conditions, claims)).toBeNull();
    expect(failedCondition(conditions, { ...claims, ref: 'refs/heads/dev' })).toBe('ref');
    expect(failedCondition(conditions, { ...claims, sub: 'repo:acme/web:ref:refs/heads/main', ref: 'x' })).toBe('ref');
    expect(failedCondition(conditions, { sub: claims.sub, ref: claims.ref })).toBe('repository');
    expect(failedCondition({ groups: '*' }, { groups: ['a'] })).toBe('groups');
    expect(failedCondition({ run_attempt: '1' }, { run_attempt: 1 })).toBeNull();
    expect(failedCondition({ toString: '*' }, {})).toBe('toString');
  });
});
