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

  it('sees a second factor in amr mfa, two methods one of which is not knowledge, or an acr the provider is configured with; not in a password alone', () => {
    expect(showsSecondFactor(['pwd', 'mfa'], undefined, [])).toBe(true);
    expect(showsSecondFactor(['pwd', 'otp'], undefined, [])).toBe(true);
    expect(showsSecondFactor(['hwk', 'fpt'], undefined, [])).toBe(true);
    expect(showsSecondFactor(['pwd'], undefined, [])).toBe(false);
    expect(showsSecondFactor(['pwd', 'kba'], undefined, [])).toBe(false);
    expect(showsSecondFactor(['otp'], undefined, [])).toBe(false);
    expect(showsSecondFactor([], undefined, [])).toBe(false);
    const okta = ['urn:okta:loa:2fa:any', 'http://schemas.openid.net/pape/policies/2007/06/multi-factor'];
    expect(showsSecondFactor([], 'http://schemas.openid.net/pape/policies/2007/06/multi-factor', okta)).toBe(true);
    expect(showsSecondFactor([], 'urn:okta:loa:2fa:any', okta)).toBe(true);
    expect(showsSecondFactor([], 'urn:okta:loa:2fa:any', [])).toBe(false); // not named by this provider's configuration
    expect(showsSecondFactor([], '1', okta)).toBe(false);
    expect(showsSecondFactor([], 'urn:mace:incommon:iap:silver', okta)).toBe(false);
  });

  it('never reads words into an acr: values that say there was no second factor do not count (issue #43, finding 2)', () => {
    for (const acr of ['urn:acme:loa:no-mfa', 'non-mfa', 'mfa-not-performed', 'skip_2fa', 'mfa', '2fa', 'multi-factor']) {
      expect(showsSecondFactor(['pwd'], acr, ['urn:okta:loa:2fa:any'])).toBe(false);
    }
  });
});
