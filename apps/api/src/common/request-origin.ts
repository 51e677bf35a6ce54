import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';

/** A Host header as a browser could use it: a name or an address, with a port. */
const WELL_FORMED_HOST = /^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i;

/**
 * The origin the client reached this server at (`http://127.0.0.1:3000`), from the request's
 * protocol (X-Forwarded-Proto when TRUST_PROXY believes it) and Host header; undefined for a
 * malformed Host. Links made for a client use it while PUBLIC_URL is not set (see
 * DeviceLoginService.publicBase), so a CLI given `127.0.0.1` is not sent to `localhost`, where
 * the browser's cookies differ.
 */
export function originOf(req: Request): string | undefined {
  const host = req.get('host');
  return host && WELL_FORMED_HOST.test(host) ? `${req.protocol}://${host.toLowerCase()}` : undefined;
}

/** originOf as a route parameter. */
export const RequestOrigin = createParamDecorator((_data: unknown, ctx: ExecutionContext): string | undefined => originOf(ctx.switchToHttp().getRequest<Request>()));
