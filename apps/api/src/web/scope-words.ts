import { type Scope, SCOPES } from '@prospect/contract';

/** A scope as a page lists it: a sentence for the person, the scope's own name kept for a detail line. */
export interface ScopeLine {
  name: Scope;
  words: string;
}

/**
 * The order pages list scopes in: who you are first, then what it may see, then what it may do.
 * A record over every scope, so a new one cannot be left off the pages (and so never shown to the
 * person approving it) without the build saying so.
 */
const RANK: Record<Scope, number> = { openid: 0, profile: 1, email: 2, orgs: 3, tokens: 4, admin: 5 };
const ORDER = (Object.keys(RANK) as Scope[]).sort((a, b) => RANK[a] - RANK[b]);

/**
 * What approving a scope lets the application do, in a sentence for the person (the contract's
 * SCOPES words are the API's reference; `admin`'s there is written for anyone, "if you are an
 * administrator", which a page knows and need not ask).
 */
const PAGE_WORDS: Partial<Record<Scope, string>> = {
  admin: 'Administer this Prospect as you: people, applications and their sessions',
};

/**
 * The scopes a page shows this person, as sentences. `admin` only for an administrator: it gives
 * nobody else anything (the admin API checks the role too), so a person who is not one never
 * reads about it.
 */
export function scopeLines(scopes: readonly Scope[], viewer: { isAdmin: boolean }): ScopeLine[] {
  return ORDER.filter((scope) => scopes.includes(scope) && (scope !== 'admin' || viewer.isAdmin)).map((name) => ({ name, words: PAGE_WORDS[name] ?? SCOPES[name] }));
}
