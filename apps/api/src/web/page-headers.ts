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
