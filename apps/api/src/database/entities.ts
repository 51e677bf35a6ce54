import { AuthEvent } from '../audit/auth-event.entity.js';
import { DeviceLogin } from '../device-login/device-login.entity.js';
import { OAuthClient } from '../oauth/oauth-client.entity.js';
import { AccessToken } from '../tokens/access-token.entity.js';
import { RefreshToken } from '../refresh-tokens/refresh-token.entity.js';
import { User } from '../users/user.entity.js';

/** Every TypeORM entity of the service; listed explicitly (no globs under ESM). */
export const ENTITIES = [User, DeviceLogin, AccessToken, RefreshToken, AuthEvent, OAuthClient];
