import { Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { isUniqueViolation } from '../database/sql.js';
import { conflict } from '../common/api-exception.js';
import { AppConfig } from '../config/app-config.js';
import { DUMMY_HASH_PROMISE, hashPassword, verifyPassword } from './password.js';
import { User } from './user.entity.js';

export const MIN_PASSWORD_LENGTH = 8;

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

@Injectable()
export class UsersService implements OnApplicationBootstrap {
  private readonly logger = new Logger(UsersService.name);

  constructor(
    @InjectRepository(User) private readonly users: Repository<User>,
    private readonly config: AppConfig,
  ) {}

  /** Headless deployments get their admin from PROSPECT_ADMIN_EMAIL / _PASSWORD. */
  async onApplicationBootstrap(): Promise<void> {
    if (!this.config.admin) return;
    const { email, password } = this.config.admin;
    const existing = await this.findByEmail(email);
    if (!existing) {
      await this.create({ email, name: email.split('@')[0]!, password, role: 'admin' });
      this.logger.log(`created admin ${normalizeEmail(email)}`);
    } else if (existing.role !== 'admin') {
      await this.users.update(existing.id, { role: 'admin' });
      this.logger.log(`promoted ${existing.email} to admin`);
    }
  }

  findById(id: string): Promise<User | null> {
    return this.users.findOneBy({ id });
  }

  findByEmail(email: string): Promise<User | null> {
    return this.users.findOneBy({ email: normalizeEmail(email) });
  }

  /**
   * Creates a person. The very first account of an empty database is an admin,
   * so a fresh install can be administered without extra setup.
   */
  async create(input: { email: string; name: string; password?: string; role?: User['role'] }): Promise<User> {
    const passwordHash = input.password ? await hashPassword(input.password) : null;
    try {
      const [row] = (await this.users.query(
        `INSERT INTO users (email, name, password_hash, role)
         VALUES ($1, $2, $3, COALESCE($4, CASE WHEN EXISTS (SELECT 1 FROM users) THEN 'user' ELSE 'admin' END))
         RETURNING id`,
        [normalizeEmail(input.email), input.name.trim(), passwordHash, input.role ?? null],
      )) as Array<{ id: string }>;
      return (await this.findById(row!.id))!;
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw conflict('An account with this e-mail address already exists.');
      }
      throw err;
    }
  }

  /** The user for these credentials, or null; takes the same time whether the e-mail exists or not. */
  async authenticate(email: string, password: string): Promise<User | null> {
    const user = await this.users.findOne({
      where: { email: normalizeEmail(email) },
      select: { id: true, email: true, name: true, role: true, passwordHash: true, createdAt: true, updatedAt: true },
    });
    const check = await verifyPassword(password, user?.passwordHash ?? (await DUMMY_HASH_PROMISE));
    if (!user?.passwordHash || !check.ok) return null;
    if (check.rehash) {
      // Made with older parameters: replace it now that the password is known to be right.
      await this.users.update(user.id, { passwordHash: await hashPassword(password) });
      this.logger.log(`upgraded the password hash of ${user.email}`);
    }
    delete (user as Partial<User>).passwordHash;
    return user;
  }
}
