import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import type { Request } from 'express';
import passport from 'passport';
import { UsersService } from '../users/users.service.js';
import { toWebUser, type WebUser } from './web-account.js';

type Serialize = (user: Express.User, done: (err: unknown, id?: string) => void) => void;
type Deserialize = (req: Request, id: unknown, done: (err: unknown, user?: WebUser | false) => void) => void;

/**
 * A session holds the user's id (and the credential epoch it signed in under, and the identity-provider
 * link it came through, if any); every request reads the person afresh (a renamed or deleted user
 * shows at once, a changed password or a refused or disabled provider ends it).
 *
 * Registered with passport by hand rather than through @nestjs/passport's
 * PassportSerializer, so that it can also be removed: passport keeps serializers
 * in one process-wide list and asks them in order, so an app closed in this
 * process (the tests start several in turn) would otherwise keep answering
 * with its closed database.
 */
@Injectable()
export class SessionSerializer implements OnApplicationShutdown {
  private readonly serialize: Serialize = (user, done) => done(null, (user as WebUser).id);

  // Three parameters: passport passes the request first, so the session's own fields are at hand.
  private readonly deserialize: Deserialize = (req, id, done) => {
    if (typeof id !== 'string') return done(null, false);
    this.users.findForSession(id, req.session.federatedLinkId).then(
      // false: the user is gone or disabled, or the account's credentials changed since this
      // session signed in (a new password, address or disable: its epoch moved on), or the
      // identity provider it signed in through refused the person or was disabled, and passport
      // drops them from the session (a request in flight when that happened may have written its
      // session back).
      (user) => done(null, user && !user.disabledAt && user.credentialEpoch === (req.session.credentialEpoch ?? 0) ? toWebUser(user) : false),
      (err: unknown) => done(err),
    );
  };

  constructor(private readonly users: UsersService) {
    passport.serializeUser(this.serialize);
    passport.deserializeUser(this.deserialize);
  }

  onApplicationShutdown(): void {
    const registry = passport as unknown as { _serializers: unknown[]; _deserializers: unknown[] };
    registry._serializers = registry._serializers.filter((fn) => fn !== this.serialize);
    registry._deserializers = registry._deserializers.filter((fn) => fn !== this.deserialize);
  }
}
