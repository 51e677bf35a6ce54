import type { FastifyReply } from 'fastify';

/**
 * A tiny tagged template for server-rendered pages: every interpolated value is
 * HTML-escaped unless it is already `Html` (a nested template). No template
 * engine, no build step; escaping by default is what keeps the pages safe.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

type Value = Html | string | number | null | undefined | false | Value[];

function render(value: Value): string {
  if (value === null || value === undefined || value === false) return '';
  if (Array.isArray(value)) return value.map(render).join('');
  if (value instanceof Html) return value.value;
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: Value[]): Html {
  let out = strings[0]!;
  values.forEach((v, i) => (out += render(v) + strings[i + 1]!));
  return new Html(out);
}

/** The page frame: one stylesheet, no inline script or style (the CSP forbids them). */
export function page(title: string, body: Html, session?: { user: { email: string }; csrfToken: string }): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Prospect</title>
<link rel="stylesheet" href="/assets/style.css">
<link rel="icon" href="data:,">
</head>
<body>
<header class="bar"><a class="brand" href="/">Prospect</a>${
    session
      ? html`<nav><a href="/settings/tokens">CLI tokens</a><form method="post" action="/logout" class="inline"><input type="hidden" name="_csrf" value="${session.csrfToken}"><button class="link" type="submit">Sign out ${session.user.email}</button></form></nav>`
      : ''
  }</header>
<main>${body}</main>
</body>
</html>`.value;
}

/**
 * What a browser needs to show our pages safely, on top of the headers every
 * answer carries (bootstrap.ts): scripts and styles only from our own files,
 * forms only to us, no framing even by old browsers, no referrer leaking a code
 * in a URL, no caching of pages that hold CSRF tokens and account details, and
 * helmet's remaining document defaults.
 */
const PAGE_POLICY =
  "default-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'; img-src 'self' data:; object-src 'none'; script-src 'self'; script-src-attr 'none'; style-src 'self'";
const PAGE_HEADERS = {
  'content-security-policy': PAGE_POLICY,
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'origin-agent-cluster': '?1',
  'referrer-policy': 'no-referrer',
  'x-dns-prefetch-control': 'off',
  'x-frame-options': 'DENY',
  'x-permitted-cross-domain-policies': 'none',
  'cache-control': 'no-store',
};
/** A page served over https also upgrades any http: address it links to; on plain http that would break every form. */
const HTTPS_PAGE_HEADERS = { ...PAGE_HEADERS, 'content-security-policy': `${PAGE_POLICY}; upgrade-insecure-requests` };

/** Answers with a rendered page. */
export function sendHtml(reply: FastifyReply, status: number, document: string): FastifyReply {
  return reply.code(status).headers(reply.request.protocol === 'https' ? HTTPS_PAGE_HEADERS : PAGE_HEADERS).type('text/html; charset=utf-8').send(document);
}
