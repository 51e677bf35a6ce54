import type { Request } from 'express';

/** Whether a request says it carries a body (chunked, or a length above 0), before anything reads it. */
export const hasBody = (req: Request): boolean => req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
