import { scryptHash } from '../../test/support/legacy-password.js';
import { hashPassword, verifyPassword } from './password.js';

describe('passwords', () => {
  it('are hashed with argon2id at OWASP parameters (19 MiB, 2 passes, 1 lane)', async () => {
    const hash = await hashPassword('correct horse battery');
    expect(hash).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
    await expect(verifyPassword('correct horse battery', hash)).resolves.toEqual({ ok: true, rehash: false });
    await expect(verifyPassword('correct horse batter', hash)).resolves.toEqual({ ok: false, rehash: false });
  });

  it('compare in Unicode NFKC form, so the same password typed on another keyboard matches', async () => {
    const hash = await hashPassword('ﬁle cabinet');
    await expect(verifyPassword('file cabinet', hash)).resolves.toMatchObject({ ok: true });
  });

  it('of the previous scheme (scrypt N=2^15) still verify, and ask to be hashed again', async () => {
    const legacy = await scryptHash('correct horse battery', 2 ** 15);
    await expect(verifyPassword('correct horse battery', legacy)).resolves.toEqual({ ok: true, rehash: true });
    await expect(verifyPassword('wrong', legacy)).resolves.toEqual({ ok: false, rehash: false });
  });

  it('are refused, without the work, when a stored hash asks for more than the cap', async () => {
    const heavyArgon = '$argon2id$v=19$m=4194304,t=2,p=1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g';
    const heavyScrypt = `scrypt$${2 ** 22}$8$1$c2FsdA$aGFzaA`;
    const started = Date.now();
    await expect(verifyPassword('x', heavyArgon)).resolves.toEqual({ ok: false, rehash: false });
    await expect(verifyPassword('x', heavyScrypt)).resolves.toEqual({ ok: false, rehash: false });
    await expect(verifyPassword('x', 'plaintext')).resolves.toEqual({ ok: false, rehash: false });
    expect(Date.now() - started).toBeLessThan(200);
  });
});
