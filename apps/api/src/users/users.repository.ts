import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { Sql } from '../database/sql.js';
import { User } from './user.entity.js';

export interface NewUser {
  /** Already normalized (users.service.ts normalizeEmail). */
  email: string;
  name: string;
  passwordHash: string | null;
  role: User['role'];
}

/** Every statement on `users`: TypeORM's entity repository, and one INSERT that may run in a caller's transaction. */
@Injectable()
export class UsersRepository {
  constructor(
    @InjectRepository(User) private readonly users: Repository<User>,
    private readonly sql: Sql,
  ) {}

  findById(id: string): Promise<User | null> {
    return this.users.findOneBy({ id });
  }

  findByEmail(email: string): Promise<User | null> {
    return this.users.findOneBy({ email });
  }

  /** With its password hash, which no other read selects. */
  findWithPasswordHash(email: string): Promise<User | null> {
    return this.users.findOne({
      where: { email },
      select: { id: true, email: true, name: true, role: true, passwordHash: true, createdAt: true, updatedAt: true },
    });
  }

  /** The new user's id; throws a unique violation (isUniqueViolation) when the e-mail is taken. */
  async insert(user: NewUser, manager?: EntityManager): Promise<string> {
    const [row] = await this.sql.rows<{ id: string }>(
      `INSERT INTO users (email, name, password_hash, role) VALUES ($1, $2, $3, $4) RETURNING id`,
      [user.email, user.name, user.passwordHash, user.role],
      manager,
    );
    return row!.id;
  }

  /**
   * Makes `email` an administrator in one statement, idempotent when several instances start at
   * once with the same PROSPECT_ADMIN_*: creates the account, or promotes the existing one
   * (keeping its password), or finds it an admin already.
   */
  async ensureAdmin(user: Omit<NewUser, 'role'>): Promise<'created' | 'promoted' | 'unchanged'> {
    const [row] = await this.sql.rows<{ created: boolean }>(
      `INSERT INTO users (email, name, password_hash, role) VALUES ($1, $2, $3, 'admin')
       ON CONFLICT (email) DO UPDATE SET role = 'admin' WHERE users.role <> 'admin'
       RETURNING (xmax = 0) AS created`,
      [user.email, user.name, user.passwordHash],
    );
    return !row ? 'unchanged' : row.created ? 'created' : 'promoted';
  }

  async update(id: string, changes: Partial<Pick<User, 'role' | 'passwordHash'>>): Promise<void> {
    await this.users.update(id, changes);
  }

  /** A new name or password with its audit event, in one statement; false when there is no such user. */
  async changeWithAudit(
    id: string,
    change: { name: string } | { passwordHash: string },
    event: 'account.rename' | 'password.change',
    now: Date,
    ip: string | null,
  ): Promise<boolean> {
    const [column, value] = 'name' in change ? ['name', change.name] : ['password_hash', change.passwordHash];
    const rows = await this.sql.rows(
      `WITH changed AS (UPDATE users SET ${column} = $2, updated_at = $3 WHERE id = $1 RETURNING id)
       INSERT INTO auth_events (type, user_id, ip, detail, created_at) SELECT $4, id, $5, '{}'::jsonb, $3 FROM changed RETURNING id`,
      [id, value, now, event, ip],
    );
    return rows.length > 0;
  }

  /**
   * Deletes an account in `tx`, unless it is the last administrator (the admins are locked first,
   * so two admins deleting themselves at once cannot leave none). Its tokens, refresh tokens,
   * sessions and links go with it (foreign keys); its audit events stay, without it, its addresses
   * or details, and one `account.delete` event without personal data is added.
   * @returns 'deleted', 'last-admin', or 'unknown'.
   */
  async deleteAccount(tx: EntityManager, id: string, now: Date): Promise<'deleted' | 'last-admin' | 'unknown'> {
    const admins = await this.sql.rows<{ id: string }>(`SELECT id FROM users WHERE role = 'admin' FOR UPDATE`, [], tx);
    if (admins.length === 1 && admins[0]!.id === id) return 'last-admin';
    await this.sql.rows(`UPDATE auth_events SET ip = NULL, detail = '{}'::jsonb WHERE user_id = $1`, [id], tx);
    const deleted = await this.sql.rows(
      `WITH gone AS (DELETE FROM users WHERE id = $1 RETURNING id)
       INSERT INTO auth_events (type, user_id, ip, detail, created_at) SELECT 'account.delete', NULL, NULL, '{}'::jsonb, $2 FROM gone RETURNING id`,
      [id, now],
      tx,
    );
    return deleted.length ? 'deleted' : 'unknown';
  }
}
