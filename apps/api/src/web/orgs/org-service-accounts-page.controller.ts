import { Controller, Get, Param, ParseUUIDPipe, Post, Req, Res, UseFilters, UseGuards } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import {
  CreateServiceAccountFederationRequestSchema,
  CreateServiceAccountRequestSchema,
  type CreatedServiceAccountSecret,
  SERVICE_ACCOUNT_SCOPES,
  type ServiceAccountScope,
  utcMinute,
} from '@prospect/contract';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator.js';
import { ApiException } from '../../common/api-exception.js';
import { AppConfig } from '../../config/app-config.js';
import { ORG_PAGE_PREFIX, type OrgActor } from '../../organizations/organizations.service.js';
import { ServiceAccountsService } from '../../service-accounts/service-accounts.service.js';
import { field, queryParam } from '../form.js';
import { CsrfGuard, PageRefusalFilter, SignedInGuard } from '../page-guards.js';
import { changeThenRedirect, OrgAdminPages, orgPagePath } from './org-admin-pages.js';

const uuid = new ParseUUIDPipe();

/** What each scope lets a service account's token do, in words. */
const SCOPE_WORDS: Record<ServiceAccountScope, string> = {
  profile: 'say who it is (its name, on /api/cli/auth/me)',
  orgs: 'act for this organization in Prospect’s product services',
};

const DONE: Record<string, string> = {
  created: 'Created. Give it a secret (or register a key) for its job to sign in with.',
  disabled: 'Disabled: its tokens ended.',
  enabled: 'Enabled.',
  deleted: 'Deleted, with its credentials and tokens.',
  'secret-deleted': 'Secret deleted: its tokens ended.',
  'federation-added': 'Trusted: its CI may now exchange its tokens for this account’s.',
  'federation-deleted': 'No longer trusted: the tokens exchanged through it ended.',
};

/** The conditions a textarea holds, one `claim=pattern` a line (a pattern may hold `=`); blank lines skipped. */
function conditionLines(text: string): Record<string, string> | undefined {
  const conditions: Record<string, string> = {};
  for (const line of text.split(/\r?\n/).map((l) => l.trim()).filter(Boolean)) {
    const at = line.indexOf('=');
    if (at <= 0) return undefined;
    conditions[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return conditions;
}

/** The scopes a checkbox reads (a repeated field is an array). */
const checkedScopes = (req: Request) => {
  const value = (req.body as Record<string, unknown>)?.scopes;
  return (Array.isArray(value) ? value : value === undefined ? [] : [value]).map(String);
};

/** What was typed in a refused form, shown in it again: a new account's, or an issuer to trust for account `accountId`. */
type Typed = { typedAccount?: { name: string; scopes: string[] }; typedIssuer?: { accountId: string; issuer: string; audience: string; conditions: string } };

/**
 * /orgs/{slug}/service-accounts (issue #45): an organization's admins list its service accounts,
 * create one, create and delete its secrets (a new secret is shown on the answer to its form, once,
 * never again), trust an issuer for it and stop trusting one (token exchange), disable, enable and
 * delete it. The same service as the API's routes; a form's
 * refusal shows its message on the page, with its status.
 */
@ApiExcludeController()
@Public()
@UseGuards(SignedInGuard)
@UseFilters(PageRefusalFilter)
@Controller(`${ORG_PAGE_PREFIX.slice(1)}/:slug/service-accounts`)
export class OrgServiceAccountsPageController {
  constructor(
    private readonly adminPages: OrgAdminPages,
    private readonly accounts: ServiceAccountsService,
    private readonly config: AppConfig,
  ) {}

  @Get()
  async page(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its service accounts');
    if (actor) await this.render(req, res, actor, 200, {});
  }

  @Post()
  @UseGuards(CsrfGuard)
  async create(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its service accounts');
    if (!actor) return;
    // A refused form is shown again with what was typed, as every form of the site.
    const typedAccount = { name: field(req, 'name'), scopes: checkedScopes(req) };
    const input = CreateServiceAccountRequestSchema.safeParse(typedAccount);
    if (!input.success) return this.render(req, res, actor, 400, { error: 'Give it a name (up to 80 characters) and choose among the scopes shown.', typedAccount });
    await this.act(req, res, actor, 'created', () => this.accounts.create(actor, input.data), { typedAccount });
  }

  @Post(':id/secrets')
  @UseGuards(CsrfGuard)
  async createSecret(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id', uuid) id: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its service accounts');
    if (!actor) return;
    const days = field(req, 'expiresInDays');
    const expiresInDays = days ? Number(days) : undefined;
    if (expiresInDays !== undefined && !(Number.isInteger(expiresInDays) && expiresInDays >= 1 && expiresInDays <= 730)) {
      return this.render(req, res, actor, 400, { error: 'A secret expires in 1 to 730 days, or never (leave it empty).' });
    }
    let secret: CreatedServiceAccountSecret;
    try {
      secret = await this.accounts.createSecret(actor, id, expiresInDays);
    } catch (err) {
      if (err instanceof ApiException) return this.render(req, res, actor, err.getStatus(), { error: err.message });
      throw err;
    }
    // Shown in this answer only: a reload or a redirect would not show it again.
    res.setHeader('Cache-Control', 'no-store');
    await this.render(req, res, actor, 201, { newSecret: { accountId: id, ...secret, expiresAt: secret.expiresAt ? utcMinute(secret.expiresAt) : null } });
  }

  @Post(':id/secrets/:secretId/delete')
  @UseGuards(CsrfGuard)
  async deleteSecret(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id', uuid) id: string, @Param('secretId', uuid) secretId: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its service accounts');
    if (actor) await this.act(req, res, actor, 'secret-deleted', () => this.accounts.deleteSecret(actor, id, secretId));
  }

  @Post(':id/federations')
  @UseGuards(CsrfGuard)
  async addFederation(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id', uuid) id: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its service accounts');
    if (!actor) return;
    const typedIssuer = { accountId: id, issuer: field(req, 'issuer'), audience: field(req, 'audience').trim(), conditions: field(req, 'conditions') };
    const conditions = conditionLines(typedIssuer.conditions);
    if (!conditions) return this.render(req, res, actor, 400, { error: 'Write the conditions one a line, as claim=pattern (for example repository=acme/api).', typedIssuer });
    const { issuer, audience } = typedIssuer;
    const input = CreateServiceAccountFederationRequestSchema.safeParse({ issuer, ...(audience ? { audience } : {}), conditions });
    if (!input.success) {
      const issue = input.error.issues[0]!;
      return this.render(req, res, actor, 400, { error: `${issue.path.join('.') || 'The form'}: ${issue.message}`, typedIssuer });
    }
    await this.act(req, res, actor, 'federation-added', () => this.accounts.addFederation(actor, id, input.data), { typedIssuer });
  }

  @Post(':id/federations/:federationId/delete')
  @UseGuards(CsrfGuard)
  async deleteFederation(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id', uuid) id: string, @Param('federationId', uuid) federationId: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its service accounts');
    if (actor) await this.act(req, res, actor, 'federation-deleted', () => this.accounts.deleteFederation(actor, id, federationId));
  }

  @Post(':id/disable')
  @UseGuards(CsrfGuard)
  async disable(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id', uuid) id: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its service accounts');
    if (actor) await this.act(req, res, actor, 'disabled', () => this.accounts.update(actor, id, { disabled: true }));
  }

  @Post(':id/enable')
  @UseGuards(CsrfGuard)
  async enable(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id', uuid) id: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its service accounts');
    if (actor) await this.act(req, res, actor, 'enabled', () => this.accounts.update(actor, id, { disabled: false }));
  }

  @Post(':id/delete')
  @UseGuards(CsrfGuard)
  async delete(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string, @Param('id', uuid) id: string) {
    const actor = await this.adminPages.adminOf(req, res, slug, 'its service accounts');
    if (actor) await this.act(req, res, actor, 'deleted', () => this.accounts.delete(actor, id));
  }


  private act(req: Request, res: Response, actor: OrgActor, done: string, work: () => Promise<unknown>, typed: Typed = {}) {
    return changeThenRedirect(res, orgPagePath(actor.organization.slug, `service-accounts?done=${done}`), work, (status, error) => this.render(req, res, actor, status, { error, ...typed }));
  }

  private async render(req: Request, res: Response, actor: OrgActor, status: number, shown: Typed & { error?: string; newSecret?: { accountId: string; id: string; clientSecret: string; expiresAt: string | null } }) {
    const accounts = await this.accounts.list(actor);
    const org = actor.organization;
    const when = (iso: string | null) => (iso ? utcMinute(iso) : null);
    res.status(status).render('org-service-accounts', {
      title: `Service accounts of ${org.name}`,
      ...this.adminPages.frame(req, org, 'serviceAccounts'),
      scopes: SERVICE_ACCOUNT_SCOPES.map((scope) => ({ scope, words: SCOPE_WORDS[scope], checked: shown.typedAccount?.scopes.includes(scope) ?? true })),
      typedAccount: shown.typedAccount,
      accounts: accounts.map((a) => ({
        ...a,
        scopes: a.scopes.join(', ') || 'none',
        createdAt: when(a.createdAt),
        newSecret: shown.newSecret?.accountId === a.id ? shown.newSecret : undefined,
        typedIssuer: shown.typedIssuer?.accountId === a.id ? shown.typedIssuer : undefined,
        secrets: a.secrets.map((s) => ({ ...s, createdAt: when(s.createdAt), expiresAt: when(s.expiresAt), lastUsedAt: when(s.lastUsedAt) })),
        keys: a.keys.map((k) => ({ ...k, lastUsedAt: when(k.lastUsedAt) })),
        federations: a.federations.map((f) => ({ ...f, createdAt: when(f.createdAt), conditions: Object.entries(f.conditions).map(([claim, pattern]) => ({ claim, pattern })) })),
      })),
      defaultAudience: this.config.publicUrl,
      done: shown.error ? undefined : DONE[queryParam(req, 'done')],
      error: shown.error,
    });
  }
}
