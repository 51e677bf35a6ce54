import type { Request } from 'express';

/** Whether a request says it carries a body (chunked, or a length above 0), before anything reads it. */
export const hasBody = (req: Request): boolean => req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;

/** Where the JSON API lives (its routes and the health check); pages and OAuth live elsewhere. */
export const API_PREFIX = '/api/';
