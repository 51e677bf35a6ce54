import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { Strategy } from 'passport-local';
import { UsersService } from '../../users/users.service.js';
import { toWebUser, type WebUser } from '../../web-sessions/web-account.js';

/** The password was right, but an administrator disabled the account. */
export class AccountDisabledError extends Error {}

/** The sign-in form: e-mail and password, checked in the same time whether the e-mail exists or not. */
@Injectable()
export class LocalStrategy extends PassportStrategy(Strategy, 'local') {
  constructor(private readonly users: UsersService) {
    super({ usernameField: 'email', passwordField: 'password' });
  }

  async validate(email: string, password: string): Promise<WebUser | false> {
    const user = await this.users.authenticate(email.trim(), password);
    if (user?.disabledAt) throw new AccountDisabledError();
    return user ? toWebUser(user) : false;
  }
}
