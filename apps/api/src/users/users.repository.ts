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
}
