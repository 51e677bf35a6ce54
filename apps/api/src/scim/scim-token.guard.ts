import { type CallHandler, type CanActivate, createParamDecorator, type ExecutionContext, Injectable, Logger, type NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import { catchError, type Observable, tap, throwError } from 'rxjs';
import { SCIM_MEDIA_TYPE } from '../common/http-body.js';
import { AppConfig } from '../config/app-config.js';
import { ScimAdminService, scimPath } from './scim-admin.service.js';
import type { ScimContext } from './scim-provisioning.service.js';

type ScimRequest = Request & { scim?: ScimContext; scimOutcome?: string };

/**
 * A SCIM request must carry a working token of the organization of its `:slug`
 * (ScimAdminService.authenticate: counted per address before it is looked up). A token of another
 * organization is refused as an unknown one. The bearer guard of the API does not run here
 * (`@Public()`): a SCIM token is not a person's token and reaches nothing but /scim/.
 */
@Injectable()
export class ScimTokenGuard implements CanActivate {
  constructor(
    private readonly admin: ScimAdminService,
    private readonly config: AppConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const req = context.switchToHttp().getRequest<ScimRequest>();
    const slug = String(req.params.slug ?? '');
    const owner = await this.admin.authenticate(slug, req.get('authorization'), req.ip ?? 'unknown');
    req.scim = { ...owner, base: `${this.config.publicUrl}${scimPath(owner.slug)}` };
    return true;
  }
}

/** The organization a SCIM request acts for (ScimTokenGuard found it). */
export const Scim = createParamDecorator((_: unknown, ctx: ExecutionContext): ScimContext => ctx.switchToHttp().getRequest<ScimRequest>().scim!);

const MAX_LOGGED = 200;

/** A path and query as a person reads them (`filter=userName eq "…"`), or as sent when it does not decode. */
function readable(url: string): string {
  try {
    return decodeURIComponent(url.replace(/\+/g, ' '));
  } catch {
    return url;
  }
}

/** What an answer says in the provisioning log: the resource's userName or displayName, a list's count. */
function outcomeOf(value: unknown): string {
  const v = (value ?? {}) as Record<string, unknown>;
  if (typeof v.userName === 'string') return `${v.userName}${v.active === false ? ' (inactive)' : ''}`;
  if (typeof v.displayName === 'string') return v.displayName;
  if (typeof v.totalResults === 'number') return `${v.totalResults} found`;
  return value === undefined ? 'done' : 'answered';
}

/**
 * Answers in `application/scim+json`, and writes every authenticated request in the organization's
 * provisioning log once answered: method, resource (the path under the organization's base, with
 * its query), status, and what it did or why it was refused.
 */
@Injectable()
export class ScimLogInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Scim');

  constructor(private readonly admin: ScimAdminService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<ScimRequest>();
    const res = context.switchToHttp().getResponse<Response>();
    res.type(SCIM_MEDIA_TYPE);
    const scim = req.scim!;
    const prefix = scimPath(scim.slug);
    const resource = readable(req.originalUrl.slice(req.originalUrl.indexOf(prefix) + prefix.length) || '/').slice(0, MAX_LOGGED);
    res.once('finish', () => {
      const entry = { method: req.method, resource, status: res.statusCode, outcome: (req.scimOutcome ?? '').slice(0, MAX_LOGGED) };
      this.admin.logRequest(scim.organizationId, entry).catch((err: Error) => this.logger.warn(`provisioning log not written: ${err.message}`));
    });
    return next.handle().pipe(
      tap((value) => (req.scimOutcome = outcomeOf(value))),
      catchError((err: unknown) => {
        req.scimOutcome = err instanceof Error ? err.message : 'failed';
        return throwError(() => err);
      }),
    );
  }
}
