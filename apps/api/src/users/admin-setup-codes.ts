import { Injectable } from '@nestjs/common';
import { generateSecret, sha256 } from '../common/secrets.js';
import { ServerSecrets } from '../server-secrets/server-secrets.js';
import type { Tx } from '../database/tx.js';

/** A sign-up presented a setup code that is wrong, used, or no longer needed. */
export class InvalidSetupCodeError extends Error {
  constructor() {
    super('invalid setup code');
  }
}

const NAME = 'admin-setup-code';
const hashOf = (code: string) => sha256(code).toString('base64url');

/** What a start found: a code it made now (print it), or one another instance made (and printed) earlier. */
export type SetupCodeIssue = { code: string } | { issuedAt: Date };

/**
 * The one-time code that makes a sign-up the first administrator, kept as its SHA-256
 * in `server_secrets`. It exists only while there is no admin: whoever reaches a fresh
 * deployment first cannot make themselves admin without it. One code per deployment: the
 * instance that makes it prints it, and it stays valid until used, whichever instance serves
 * the sign-up; `main.js setup-code` replaces one whose log line was lost.
 */
@Injectable()
export class AdminSetupCodes {
  /** The code this process printed at start, for the banner of `npm start`. */
  issued?: string;

  constructor(private readonly secrets: ServerSecrets) {}

  /** While no admin exists: a new code if there is none yet (racing instances make one), else when the current one was made. */
  async issueIfNoAdmin(): Promise<SetupCodeIssue | null> {
    const code = generateSecret('prss_');
    if (await this.secrets.createUnlessPresentOrAdmin(NAME, hashOf(code))) {
      this.issued = code;
      return { code };
    }
    const issuedAt = await this.secrets.createdAtUnlessAdmin(NAME);
    return issuedAt ? { issuedAt } : null;
  }

  /** A new code in place of the current one (`main.js setup-code`); null once an admin exists. */
  async replace(): Promise<string | null> {
    const code = generateSecret('prss_');
    return (await this.secrets.putUnlessAdminExists(NAME, hashOf(code))) ? code : null;
  }

  /** Uses the code up, inside the caller's transaction; false when it is not the current one or an admin exists. */
  async consume(code: string, tx: Tx): Promise<boolean> {
    if (!code.startsWith('prss_') || code.length > 100) return false;
    return this.secrets.takeUnlessAdminExists(tx, NAME, hashOf(code));
  }

  /** An admin exists by configuration: no code is needed any more. */
  async withdraw(): Promise<void> {
    await this.secrets.delete(NAME);
  }
}
