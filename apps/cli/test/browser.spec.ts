import { decideBrowser } from '../src/device-login/browser.js';

describe('decideBrowser', () => {
  const desktop = { interactive: true, requested: true, env: { DISPLAY: ':0' }, platform: 'linux' as const };

  it('opens on a local desktop, macOS and Windows', () => {
    expect(decideBrowser(desktop).open).toBe(true);
    expect(decideBrowser({ ...desktop, env: {}, platform: 'darwin' }).open).toBe(true);
    expect(decideBrowser({ ...desktop, env: {}, platform: 'win32' }).open).toBe(true);
    expect(decideBrowser({ ...desktop, env: { WSL_DISTRO_NAME: 'Ubuntu' } })).toEqual({ open: true, viaWslview: true });
  });

  it.each([
    ['--no-browser', { requested: false }, '--no-browser'],
    ['not a terminal', { interactive: false }, 'not an interactive terminal'],
    ['over SSH', { env: { DISPLAY: ':0', SSH_CONNECTION: '1.2.3.4 5 6.7.8.9 22' } }, 'SSH'],
    ['with a terminal browser', { env: { DISPLAY: ':0', BROWSER: 'w3m' } }, 'terminal browser'],
    ['without a display', { env: {} }, 'no desktop'],
  ])('does not open %s', (_, change, reason) => {
    const decision = decideBrowser({ ...desktop, ...change });
    expect(decision.open).toBe(false);
    expect(decision.reason).toContain(reason);
  });
});
