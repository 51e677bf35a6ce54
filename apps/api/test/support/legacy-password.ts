import { randomBytes, scrypt } from 'node:crypto';

/** A hash as the previous scheme made it (`scrypt$N$r$p$salt$hash`), for tests of the upgrade. */
export async function scryptHash(password: string, N = 2 ** 15): Promise<string> {
  const salt = randomBytes(16);
  const key = await new Promise<Buffer>((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, 32, { N, r: 8, p: 1, maxmem: 256 * 1024 * 1024 }, (err, k) => (err ? reject(err) : resolve(k))),
  );
  return ['scrypt', N, 8, 1, salt.toString('base64url'), key.toString('base64url')].join('$');
}
