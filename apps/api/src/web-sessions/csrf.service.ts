import { Injectable } from '@nestjs/common';
import { csrfSync } from 'csrf-sync';
import type { Request } from 'express';
import { constantTimeEqual } from '../common/secrets.js';

/**
 * Synchroniser CSRF tokens (csrf-sync): one random token per session, kept in the
 * session, echoed in every form as `_csrf` (or sent as `x-csrf-token` by scripts).
 * A session renewed at sign-in gets a new token.
 */
@Injectable()
export class CsrfService {
  private readonly csrf = csrfSync({
    size: 32,
    getTokenFromRequest: (req) => {
      const fromForm = (req.body as Record<string, unknown> | undefined)?._csrf;
      const fromHeader = req.headers['x-csrf-token'];
      return typeof fromForm === 'string' ? fromForm : typeof fromHeader === 'string' ? fromHeader : undefined;
    },
  });

  /** This session's token, created on first use. */
  tokenFor(req: Request): string {
    return this.csrf.generateToken(req);
  }

  /**
   * The library's `isRequestValid` compares with `===`; the design compares secrets
   * in constant time, so the comparison is ours, over the library's token getters.
   */
  isValid(req: Request): boolean {
    if (!req.session) return false;
    const sent = this.csrf.getTokenFromRequest(req);
    const kept = this.csrf.getTokenFromState(req);
    return typeof sent === 'string' && typeof kept === 'string' && constantTimeEqual(Buffer.from(sent), Buffer.from(kept));
  }
}
