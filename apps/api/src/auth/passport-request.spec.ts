import passport from 'passport';
import { installPassportRequestMethods } from './passport-request.js';

describe('installPassportRequestMethods', () => {
  const prototype = {};
  installPassportRequestMethods(prototype);

  it("absorbs passport's per-request augmentation: the same values read back, and no own property is added", () => {
    const req = Object.create(prototype) as Record<string, unknown>;
    const logIn = req.logIn;
    expect(typeof logIn).toBe('function');
    // What passport's authenticate middleware does to every request:
    req.login = req.logIn = req.logIn || (() => undefined);
    req._sessionManager = (passport as unknown as { _sm: unknown })._sm;
    expect(req.login).toBe(logIn);
    expect(req._sessionManager).toBe((passport as unknown as { _sm: unknown })._sm);
    expect(Object.keys(req)).toEqual([]);
  });

  it('keeps a different value written by anyone else as the request’s own', () => {
    const req = Object.create(prototype) as Record<string, unknown>;
    const custom = () => 'mine';
    req.logIn = custom;
    expect(req.logIn).toBe(custom);
    expect(Object.keys(req)).toEqual(['logIn']);
    expect((Object.create(prototype) as Record<string, unknown>).logIn).not.toBe(custom);
  });
});
