import type { Request } from 'express';

/** Whether a request says it carries a body (chunked, or a length above 0), before anything reads it. */
export const hasBody = (req: Request): boolean => req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/** Where the JSON API lives (its routes and the health check); pages and OAuth live elsewhere. */
export const API_PREFIX = '/api/';

/** Where SCIM 2.0 provisioning lives (scim/, issue #47): JSON (`application/scim+json`) with SCIM's own error body. */
export const SCIM_PREFIX = '/scim/';

/** The media type of SCIM's requests and answers (RFC 7644 §3.1); plain `application/json` is read too. */
export const SCIM_MEDIA_TYPE = 'application/scim+json';
