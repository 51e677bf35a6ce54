import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';

/**
 * What a browser needs to show our pages safely, on top of the REST set every answer
 * carries (bootstrap.ts): helmet's document set with a strict CSP (scripts and styles
 * only from our own files, forms only to us, no framing), no referrer leaking a code
 * in a URL, and no caching of pages that hold CSRF tokens and account details.
 * A page served over https also upgrades any http: address it links to; on plain
 * http that would break every form.
 */
const documentHeaders = (upgradeInsecureRequests: boolean) =>
  helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        'default-src': ["'self'"],
        'base-uri': ["'self'"],
        'form-action': ["'self'"],
        'frame-ancestors': ["'none'"],
        'img-src': ["'self'", 'data:'],
        'object-src': ["'none'"],
        'script-src': ["'self'"],
        'script-src-attr': ["'none'"],
        'style-src': ["'self'"],
        ...(upgradeInsecureRequests ? { 'upgrade-insecure-requests': [] } : {}),
      },
    },
    crossOriginOpenerPolicy: { policy: 'same-origin' },
    crossOriginResourcePolicy: { policy: 'same-origin' },
    referrerPolicy: { policy: 'no-referrer' },
    xFrameOptions: { action: 'deny' },
    // HSTS is the REST set's, decided by PUBLIC_URL.
    strictTransportSecurity: false,
  });

const overHttp = documentHeaders(false);
const overHttps = documentHeaders(true);

export function pageHeaders(req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Cache-Control', 'no-store');
  (req.secure ? overHttps : overHttp)(req, res, next);
}

/**
 * A CSP source for where a redirect URI leads: its origin (`https://<id>.chromiumapp.org`,
 * `http://127.0.0.1:51234`); the scheme alone for a private-use scheme (`com.example.app:`) and
 * for an IPv6 loopback host, which CSP's host syntax cannot name. Undefined for anything else.
 */
export function formTargetSource(uri: string): string | undefined {
  if (!URL.canParse(uri)) return undefined;
  const url = new URL(uri);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return /^[a-z][a-z0-9+.-]*:$/.test(url.protocol) ? url.protocol : undefined;
  if (url.hostname.startsWith('[')) return url.protocol;
  return /^https?:\/\/[a-z0-9.-]+(:\d{1,5})?$/.test(url.origin) ? url.origin : undefined;
}

/**
 * Lets this page's forms lead to `uri` as well as to this site. `form-action 'self'` also holds
 * for the redirects that follow a form's submission: Chromium stops a consent form whose answer
 * redirects to the client (`https://<id>.chromiumapp.org/…`) unless the page that holds the form
 * allowed it. Only the consent page does, for the one redirect URI it answers to.
 */
export function allowFormTarget(res: Response, uri: string): void {
  const source = formTargetSource(uri);
  const policy = res.getHeader('Content-Security-Policy');
  if (!source || typeof policy !== 'string') return;
  res.setHeader('Content-Security-Policy', policy.replace("form-action 'self'", `form-action 'self' ${source}`));
}
