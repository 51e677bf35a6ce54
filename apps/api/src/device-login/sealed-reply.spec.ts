import { openReply, sealReply } from './sealed-reply.js';

describe('sealed poll replies', () => {
  const reply = { accessToken: 'prs_secret', expiresAt: '2026-12-01T00:00:00.000Z' };

  it('open with the device code and login they were sealed for, and hold no plaintext', () => {
    const sealed = sealReply('prsd_code', 'login-1', reply);
    expect(sealed.toString('latin1')).not.toContain('prs_secret');
    expect(openReply('prsd_code', 'login-1', sealed)).toEqual(reply);
  });

  it('do not open with another device code, for another login, or when tampered with', () => {
    const sealed = sealReply('prsd_code', 'login-1', reply);
    expect(openReply('prsd_other', 'login-1', sealed)).toBeNull();
    expect(openReply('prsd_code', 'login-2', sealed)).toBeNull();
    const tampered = Buffer.from(sealed);
    tampered[20] = tampered[20]! ^ 1;
    expect(openReply('prsd_code', 'login-1', tampered)).toBeNull();
    expect(openReply('prsd_code', 'login-1', Buffer.alloc(8))).toBeNull();
  });
});
