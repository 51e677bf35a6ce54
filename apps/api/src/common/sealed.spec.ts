import { open, seal } from './sealed.js';

describe('sealed values', () => {
  const reply = { accessToken: 'prs_secret', expiresAt: '2026-12-01T00:00:00.000Z' };

  it('open with the secret, context and purpose they were sealed for, and hold no plaintext', () => {
    const sealed = seal('prsd_code', 'login-1', 'poll-reply', reply);
    expect(sealed.toString('latin1')).not.toContain('prs_secret');
    expect(open('prsd_code', 'login-1', 'poll-reply', sealed)).toEqual(reply);
  });

  it('do not open with another secret, context or purpose, or when tampered with', () => {
    const sealed = seal('prsd_code', 'login-1', 'poll-reply', reply);
    expect(open('prsd_other', 'login-1', 'poll-reply', sealed)).toBeNull();
    expect(open('prsd_code', 'login-2', 'poll-reply', sealed)).toBeNull();
    expect(open('prsd_code', 'login-1', 'new-token', sealed)).toBeNull();
    const tampered = Buffer.from(sealed);
    tampered[20] = tampered[20]! ^ 1;
    expect(open('prsd_code', 'login-1', 'poll-reply', tampered)).toBeNull();
    expect(open('prsd_code', 'login-1', 'poll-reply', Buffer.alloc(8))).toBeNull();
  });
});
