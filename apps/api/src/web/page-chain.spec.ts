import { isPagePath } from './page-chain.js';

// Which requests get the pages' chain (document headers, forms, web session): the same requests
// Nest's middleware consumer gave it when it was mounted on `{*rest}` with the API excluded.
describe('isPagePath', () => {
  it.each([
    ['GET', '/'],
    ['GET', '/login'],
    ['POST', '/login'],
    ['GET', '/device'],
    ['GET', '/nothing'],
    ['GET', '/assets/missing.css'],
    ['GET', '/api'],
    ['GET', '/api/'],
    ['GET', '/apix'],
    ['GET', '/oauth/'],
    ['GET', '/.well-known'],
    ['GET', '//api/x'],
    ['GET', '/%61pi/cli/auth/me'],
    ['GET', '/oauth/authorize'],
    ['HEAD', '/oauth/authorize'],
    ['GET', '/OAUTH/Authorize'],
    ['GET', '/oauth/authorize/'],
    ['POST', '/oauth/authorize/'],
    ['POST', '/oauth/authorize/consent'],
  ])('%s %s is a page', (method, path) => expect(isPagePath(method, path)).toBe(true));

  it.each([
    ['GET', '/api/cli/auth/me'],
    ['GET', '/API/cli/auth/me'],
    ['POST', '/api/cli/auth/device/poll'],
    ['GET', '/api/docs'],
    ['POST', '/oauth/token'],
    ['GET', '/oauth/authorizex'],
    ['POST', '/oauth/authorize'],
    ['DELETE', '/oauth/authorize'],
    ['DELETE', '/oauth/authorize/'],
    ['GET', '/oauth/authorize/consent'],
    ['GET', '/.well-known/openid-configuration'],
    ['GET', `/api/${'x'.repeat(200)}`],
  ])('%s %s is not', (method, path) => expect(isPagePath(method, path)).toBe(false));
});
