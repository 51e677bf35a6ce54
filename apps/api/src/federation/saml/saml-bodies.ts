import express, { type NextFunction, type Request, type Response } from 'express';

/**
 * SAML's documents are bigger than anything else Prospect is sent (BODY_LIMIT, 16 kB): an IdP's
 * metadata (Entra ID's runs to tens of kB) and a SAMLResponse with its certificates. So the three
 * routes that take them read their bodies here first, up to SAML_BODY_LIMIT (the parsers that
 * follow leave an already-read body alone): the API's `PUT /api/orgs/{slug}/saml`, the ACS
 * (`POST /saml/{slug}/acs`, a form) and the organization's SAML page form. Matched by path, not
 * mounted (a mounted middleware makes Express rewrite req.url).
 */
export const SAML_BODY_LIMIT = '256kb';
const JSON_ROUTE = /^\/api\/orgs\/[^/]+\/saml\/?$/;
const FORM_ROUTES = [/^\/saml\/[^/]+\/acs\/?$/, /^\/orgs\/[^/]+\/saml\/?$/];

const json = express.json({ limit: SAML_BODY_LIMIT });
const form = express.urlencoded({ limit: SAML_BODY_LIMIT, extended: false, parameterLimit: 50 });

export function samlBodies(req: Request, res: Response, next: NextFunction): void {
  if (req.method !== 'POST' && req.method !== 'PUT') return next();
  if (JSON_ROUTE.test(req.path) && req.is('application/json')) return json(req, res, next);
  if (FORM_ROUTES.some((route) => route.test(req.path)) && req.is('application/x-www-form-urlencoded')) return form(req, res, next);
  next();
}
