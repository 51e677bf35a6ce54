import { Injectable } from '@nestjs/common';
import type { OrgRole } from '@prospect/contract';
import { Sql } from '../database/sql.js';
import type { Tx } from '../database/tx.js';

/** An invitation as its organization's admins list it. */
export interface InvitationRow {
  id: string;
  email: string;
  role: OrgRole;
  expiresAt: Date;
}

/**
 * An invitation found by its link, with what decides whether it still works: its own state, and
 * the inviter's state now (their role in the organization, and whether their credential epoch is
 * still the one they invited under).
 */
export interface LinkedInvitationRow extends InvitationRow {
  organizationId: string;
  organizationSlug: string;
  organizationName: string;
  acceptedAt: Date | null;
  revokedAt: Date | null;
  /** The inviter's role in the organization now; null when they left, were removed or deleted their account. */
  inviterRole: OrgRole | null;
  /** The inviter's account is live and its credential epoch is the one the invitation was made under. */
  inviterUnchanged: boolean;
  inviterName: string | null;
}

/** The person accepting, as their account is now. */
export interface AccepterRow {
  email: string;
  emailVerified: boolean;
}

/**
 * Every statement on `organization_invitations` (organizations/ owns it). Only the SHA-256 of a
 * link's token is stored; a row is open while it is neither accepted, nor revoked, nor expired.
 */
@Injectable()
export class OrganizationInvitationsRepository {
  constructor(private readonly sql: Sql) {}

  /**
   * Ends every open invitation of `email` to the organization (re-inviting replaces it), in `tx`;
   * their ids. Takes their row locks, as accepting does, after the organization's.
   */
  async revokeOpenTo(tx: Tx, organizationId: string, email: string, now: Date): Promise<string[]> {
    const rows = await this.sql.rows<{ id: string }>(
      `UPDATE organization_invitations SET revoked_at = $3
        WHERE organization_id = $1 AND email = $2 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $3
        RETURNING id`,
      [organizationId, email, now],
      tx,
    );
    return rows.map((r) => r.id);
  }

  /**
   * A new invitation bound to the inviter's credential epoch now (read in the same statement, so
   * a password change racing it either precedes it and is recorded, or ends it).
   */
  async insert(
    tx: Tx,
    input: { organizationId: string; email: string; role: OrgRole; tokenHash: Buffer; inviterId: string; now: Date; expiresAt: Date },
  ): Promise<InvitationRow> {
    const [row] = await this.sql.rows<InvitationRow>(
      `INSERT INTO organization_invitations (organization_id, email, role, token_hash, invited_by_user_id, inviter_epoch, created_at, expires_at)
       SELECT $1, $2, $3, $4, u.id, u.credential_epoch, $6, $7 FROM users u WHERE u.id = $5
       RETURNING id, email, role, expires_at AS "expiresAt"`,
      [input.organizationId, input.email, input.role, input.tokenHash, input.inviterId, input.now, input.expiresAt],
      tx,
    );
    return row!;
  }

  /** The organization's open invitations, newest first. */
  listOpen(organizationId: string, now: Date): Promise<InvitationRow[]> {
    return this.sql.rows(
      `SELECT id, email, role, expires_at AS "expiresAt" FROM organization_invitations
        WHERE organization_id = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $2
        ORDER BY created_at DESC, id`,
      [organizationId, now],
    );
  }

  /** Revokes one open invitation of the organization, in one statement; it, or undefined when there is no such open one. */
  async revoke(tx: Tx, organizationId: string, id: string, now: Date): Promise<InvitationRow | undefined> {
    const [row] = await this.sql.rows<InvitationRow>(
      `UPDATE organization_invitations SET revoked_at = $3
        WHERE id = $2 AND organization_id = $1 AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $3
        RETURNING id, email, role, expires_at AS "expiresAt"`,
      [organizationId, id, now],
      tx,
    );
    return row;
  }

  /** The invitation of a link and the state that decides it (see LinkedInvitationRow); `forUpdate` takes its row lock for the rest of `tx`. */
  async findByHash(tokenHash: Buffer, tx?: Tx): Promise<LinkedInvitationRow | undefined> {
    const [row] = await this.sql.rows<LinkedInvitationRow>(`${LINKED} WHERE i.token_hash = $1`, [tokenHash], tx);
    return row;
  }

  /** As findByHash, the invitation's row locked for the rest of `tx` (the organization's lock is taken before: see the service). */
  async lockByHash(tx: Tx, tokenHash: Buffer): Promise<LinkedInvitationRow | undefined> {
    const [row] = await this.sql.rows<LinkedInvitationRow>(`${LINKED} WHERE i.token_hash = $1 FOR UPDATE OF i`, [tokenHash], tx);
    return row;
  }

  /**
   * At most `limit` invitations that ended (accepted, revoked or expired) before `before`, in `tx`
   * (retention); how many. An ended link's page then says it does not exist rather than why it ended.
   * When it ended is the earliest of the three (LEAST skips NULLs; expires_at is never NULL), the
   * expression of the index `organization_invitations_ended` (migration 048): the live ones are not read.
   */
  purgeEndedBefore(tx: Tx, before: Date, limit: number): Promise<number> {
    return this.sql.count(
      `DELETE FROM organization_invitations WHERE id IN (
         SELECT id FROM organization_invitations
          WHERE LEAST(accepted_at, revoked_at, expires_at) < $1
          LIMIT $2)`,
      [before, limit],
      tx,
    );
  }

  async markAccepted(tx: Tx, id: string, now: Date): Promise<void> {
    await this.sql.rows(`UPDATE organization_invitations SET accepted_at = $2 WHERE id = $1`, [id, now], tx);
  }

  /**
   * The accepting person's address and whether it is verified, their account's row share-locked
   * for the rest of `tx` (module-map.json's reviewed `locks` exception): an address change, which
   * updates that row, either committed before this read and is what it sees, or waits until the
   * acceptance has committed; it cannot slip in between the check and the membership.
   */
  async lockAccepter(tx: Tx, userId: string): Promise<AccepterRow | undefined> {
    const [row] = await this.sql.rows<AccepterRow>(
      `SELECT email, email_verified_at IS NOT NULL AS "emailVerified" FROM users WHERE id = $1 AND disabled_at IS NULL FOR SHARE`,
      [userId],
      tx,
    );
    return row;
  }
}

/** An invitation with its organization and its inviter's state now. */
const LINKED = `SELECT i.id, i.email, i.role, i.expires_at AS "expiresAt", i.accepted_at AS "acceptedAt", i.revoked_at AS "revokedAt",
       o.id AS "organizationId", o.slug AS "organizationSlug", o.name AS "organizationName",
       m.role AS "inviterRole", u.name AS "inviterName",
       (u.id IS NOT NULL AND u.disabled_at IS NULL AND u.credential_epoch = i.inviter_epoch) AS "inviterUnchanged"
  FROM organization_invitations i
  JOIN organizations o ON o.id = i.organization_id
  LEFT JOIN users u ON u.id = i.invited_by_user_id
  LEFT JOIN organization_members m ON m.organization_id = i.organization_id AND m.user_id = i.invited_by_user_id`;
