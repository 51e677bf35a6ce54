import { addressVerified, showsSecondFactor } from '../../src/federation/provider-claims.js';

/** How Prospect reads a provider's claims (issue #34): the address it vouches for, and a second factor it saw. */
describe('provider claims', () => {
  it('counts an address as verified only for email_verified true; Microsoft Entra’s xms_edov only when email_verified is absent', () => {
    const generic = 'https://sso.example.com';
    const entra = 'https://login.microsoftonline.com/0b7e3c52-8f6a-4d2e-9c1b-5a4f3e2d1c0b/v2.0';
    expect(addressVerified({ email_verified: true }, generic)).toBe(true);
    expect(addressVerified({ email_verified: 'true' }, generic)).toBe(false);
    expect(addressVerified({ email_verified: false }, generic)).toBe(false);
    expect(addressVerified({}, generic)).toBe(false);
    expect(addressVerified({ xms_edov: true }, generic)).toBe(false);
    expect(addressVerified({ xms_edov: true }, entra)).toBe(true);
    expect(addressVerified({ xms_edov: 'true' }, entra)).toBe(false);
    expect(addressVerified({ email_verified: false, xms_edov: true }, entra)).toBe(false);
    expect(addressVerified({ xms_edov: true }, 'https://login.microsoftonline.com.evil.example/v2.0')).toBe(false);
  });

  it('sees a second factor in amr mfa, two methods one of which is not knowledge, or a multi-factor acr; not in a password alone', () => {
    expect(showsSecondFactor(['pwd', 'mfa'])).toBe(true);
    expect(showsSecondFactor(['pwd', 'otp'])).toBe(true);
    expect(showsSecondFactor(['hwk', 'fpt'])).toBe(true);
    expect(showsSecondFactor(['pwd'])).toBe(false);
    expect(showsSecondFactor(['pwd', 'kba'])).toBe(false);
    expect(showsSecondFactor(['otp'])).toBe(false);
    expect(showsSecondFactor([])).toBe(false);
    expect(showsSecondFactor([], 'http://schemas.openid.net/pape/policies/2007/06/multi-factor')).toBe(true);
    expect(showsSecondFactor([], 'urn:okta:loa:2fa:any')).toBe(true);
    expect(showsSecondFactor([], 'mfa')).toBe(true);
    expect(showsSecondFactor([], '1')).toBe(false);
    expect(showsSecondFactor([], 'urn:mace:incommon:iap:silver')).toBe(false);
  });
});
