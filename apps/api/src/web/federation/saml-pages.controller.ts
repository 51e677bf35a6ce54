import { Controller, Get, Param, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../../auth/public.decorator.js';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { AnonymousRefusals } from '../../federation/anonymous-refusals.js';
import { FederationRefused } from '../../federation/federation-sign-in.service.js';
import { type SamlAnswer, SamlSignIn } from '../../federation/saml/saml-sign-in.service.js';
import { SamlFlights } from '../../federation/saml/saml-flights.js';
import { RateLimits, TooManyRequests } from '../../rate-limits/rate-limits.js';
import { CsrfService } from '../../web-sessions/csrf.service.js';
import { field, queryParam, safeNext, waitText } from '../form.js';
import { accountOf } from '../page-guards.js';
import { FederatedSignInCompletion } from './federated-sign-in-completion.js';
import { FederationRefusalPage } from './federation-refusal-page.js';

/**
 * The browser's side of an organization's SAML 2.0 connection (issue #47):
 * - `GET /saml/{slug}/login`: off to the IdP (HTTP-Redirect; the request's ID in a sealed flight
 *   cookie). An admin's "Test sign-in" starts at /orgs/{slug}/saml/test (its answer here is shown
 *   to them, nobody signed in);
 * - `POST /saml/{slug}/acs`: the assertion consumer (HTTP-POST), checked (SamlSignIn) and signed
 *   in as a sign-in through an OpenID provider ends (FederatedSignInCompletion). Refusals: one
 *   generic page; the reason in the organization's log (FederationRefusalPage). No CSRF token: the
 *   IdP's form posts it, and the flight cookie is what ties it to this browser. Each post is
 *   counted against its address before it is read (RateLimits.attemptSamlResponse): past the
 *   limit, a 429 page with Retry-After;
 * - `GET /saml/{slug}/sudo-done`: sudo mode's answer (started at /sudo/sso/{id}), checked at the
 *   ACS, counted in the session that asked;
 * - `GET /saml/{slug}/metadata`: the SP's metadata XML, for the IdP.
 */
@ApiExcludeController()
@Public()
@Controller('saml')
export class SamlPagesController {
  constructor(
    private readonly saml: SamlSignIn,
    private readonly flights: SamlFlights,
    private readonly completion: FederatedSignInCompletion,
    private readonly refusalPage: FederationRefusalPage,
    private readonly anonymousRefusals: AnonymousRefusals,
    private readonly csrf: CsrfService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly limits: RateLimits,
  ) {}

  @Get(':slug/login')
  async login(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    try {
      const next = safeNext(queryParam(req, 'next'), this.config.publicUrl);
      res.redirect(303, await this.saml.begin(res, slug, 'sign-in', { next }));
    } catch (err) {
      return this.refusalPage.render(req, res, err, samlId(slug));
    }
  }

  @Post(':slug/acs')
  async acs(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    // Counted before anything is read: parsing the XML and verifying its signature is the work an
    // anonymous flood would cost us. A verified answer gives its point back.
    const ip = req.ip ?? '';
    try {
      await this.limits.attemptSamlResponse(ip);
    } catch (err) {
      if (!(err instanceof TooManyRequests)) throw err;
      const heading = 'Too many sign-ins';
      return res
        .status(429)
        .set('Retry-After', String(err.retryAfterSeconds))
        .render('sso-refused', { title: heading, heading, message: `Too many failed sign-ins from your address. Please wait ${waitText(err.retryAfterSeconds)} before trying again.` });
    }
    const flight = this.flights.take(req, res);
    let answer: SamlAnswer;
    try {
      answer = await this.saml.answer(slug, flight, field(req, 'SAMLResponse'));
      await this.limits.samlResponseVerified(ip);
    } catch (err) {
      // The test's flight (sealed, this browser's) says an admin started it here: the reason is theirs to see.
      if (flight?.purpose === 'test' && flight.slug === slug && err instanceof FederationRefused) return this.testResult(req, res, slug, { error: err.reason }, err);
      return this.refusalPage.render(req, res, err, samlId(slug));
    }
    if (answer.flight?.purpose === 'test') {
      // The admin's session cookie may not come with the IdP's cross-site POST; the sealed flight is the proof.
      return this.testResult(req, res, slug, { seen: answer.seen });
    }
    if (answer.flight?.purpose === 'sudo') {
      // The IdP's POST brought no session cookie (SameSite=Lax): the checked answer goes on, sealed
      // in the flight cookie, to a GET of ours, which does bring it.
      const { subject, email, acr } = answer.identity;
      this.flights.start(res, { ...answer.flight, purpose: 'sudo-answer', at: this.clock.now().getTime(), answer: { subject, ...(email ? { email } : {}), ...(acr ? { acr } : {}) } });
      return res.redirect(303, `/saml/${encodeURIComponent(answer.organization.slug)}/sudo-done`);
    }
    try {
      const outcome = await this.saml.signIn(answer, req.ip ?? null);
      await this.completion.finish(req, res, outcome, answer.provider.displayName, answer.flight?.next ?? '/');
    } catch (err) {
      return this.refusalPage.render(req, res, err, answer.provider.id, answer.provider.displayName);
    }
  }

  /** Sudo mode's answer, in the session that asked (completion.confirmSudo: its person, its session, the identity linked to them). */
  @Get(':slug/sudo-done')
  async sudoDone(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    const flight = this.flights.take(req, res);
    try {
      const { provider, identity, flight: asked } = await this.saml.sudoAnswer(slug, flight, req.session?.sudoAt);
      await this.completion.confirmSudo(req, res, asked, provider, identity);
    } catch (err) {
      return this.refusalPage.render(req, res, err, samlId(slug));
    }
  }

  @Get(':slug/metadata')
  async metadata(@Req() req: Request, @Res() res: Response, @Param('slug') slug: string) {
    try {
      res.type('application/samlmetadata+xml').set('Cache-Control', 'no-cache').send(await this.saml.metadata(slug));
    } catch (err) {
      return this.refusalPage.render(req, res, err, samlId(slug));
    }
  }

  /** "Test sign-in": what the IdP's answer held, or why it was refused (the admin sees the reason; it is counted in the log too). */
  private testResult(req: Request, res: Response, slug: string, result: { error?: string; seen?: SamlAnswer['seen'] }, refused?: FederationRefused) {
    if (refused) this.anonymousRefusals.count(req.ip, samlId(slug), `test sign-in: ${refused.reason}`, refused.organizationId);
    const heading = result.error ? 'Test sign-in refused' : 'Test sign-in worked';
    res.status(200).render('saml-test', { title: heading, heading, ...result, back: `/orgs/${encodeURIComponent(slug)}/saml`, account: accountOf(req, this.csrf) });
  }
}

/** What a refusal at an organization's SAML endpoints is counted under (there may be no connection to name). */
const samlId = (slug: string) => `saml:${slug.slice(0, 58)}`;
