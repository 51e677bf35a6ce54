import { createRequire } from 'node:module';
import passport from 'passport';

/** passport's request methods (req.logIn and the rest), which its authenticate middleware puts on every request. */
const requestMethods = createRequire(import.meta.url)('passport/lib/http/request') as Record<'logIn' | 'logOut' | 'isAuthenticated' | 'isUnauthenticated', unknown>;

/**
 * passport's authenticate middleware adds seven properties to every request it sees:
 * `req.login = req.logIn = req.logIn || <passport's logIn>`, the same for logout, isAuthenticated
 * and isUnauthenticated, and `req._sessionManager = passport._sm` (passport 0.6 moved them off
 * http.IncomingMessage.prototype). Adding properties to requests of many shapes is V8's slowest
 * kind of store: in a profile of `/me` (issue #21) those seven lines took 6.5 % of the API's busy
 * time. Defined here once, on Express's request prototype, as accessors, the same names read the
 * same values, and passport's writes of those same values add nothing to the request. A write of
 * anything else becomes the request's own property, as it would have been.
 *
 * Hand-written because passport has no option to skip the augmentation.
 */
export function installPassportRequestMethods(requestPrototype: object): void {
  const defaults: Record<string, () => unknown> = {
    login: () => requestMethods.logIn,
    logIn: () => requestMethods.logIn,
    logout: () => requestMethods.logOut,
    logOut: () => requestMethods.logOut,
    isAuthenticated: () => requestMethods.isAuthenticated,
    isUnauthenticated: () => requestMethods.isUnauthenticated,
    _sessionManager: () => (passport as unknown as { _sm: unknown })._sm,
  };
  for (const [name, value] of Object.entries(defaults)) {
    Object.defineProperty(requestPrototype, name, {
      configurable: true,
      get: value,
      set(this: object, written: unknown) {
        if (written !== value()) Object.defineProperty(this, name, { value: written, writable: true, configurable: true, enumerable: true });
      },
    });
  }
}
