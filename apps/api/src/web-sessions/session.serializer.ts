import { Injectable } from '@nestjs/common';
import { PassportSerializer } from '@nestjs/passport';
import { UsersService } from '../users/users.service.js';
import type { WebUser } from './web-account.js';

/** A session holds the user's id only; every request reads the person afresh (a renamed or deleted user shows at once). */
@Injectable()
export class SessionSerializer extends PassportSerializer {
  constructor(private readonly users: UsersService) {
    super();
  }

  override serializeUser(user: WebUser, done: (err: Error | null, id?: string) => void): void {
    done(null, user.id);
  }

  override async deserializeUser(id: string, done: (err: Error | null, user?: WebUser | false) => void): Promise<void> {
    try {
      const user = typeof id === 'string' ? await this.users.findById(id) : null;
      // false: the user is gone, and passport drops them from the session.
      done(null, user ? { id: user.id, email: user.email, name: user.name, role: user.role } : false);
    } catch (err) {
      done(err as Error);
    }
  }
}
