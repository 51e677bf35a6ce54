import { randomBytes, scrypt, type ScryptOptions, timingSafeEqual } from 'node:crypto';
import argon2 from 'argon2';

/**
 * argon2id with OWASP's parameters (19 MiB, 2 passes, 1 lane): about 60 ms a hash on
 * the 2-core dev machine. The parameters travel in each hash (PHC string), so they can
 * be raised later: a hash made with weaker ones is replaced at the next sign-in.
 */
const ARGON2 = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;
/** The most a stored hash may ask for; past it, verification refuses rather than spend the memory or time. */
const ARGON2_CAP = { memoryCost: 65_536, timeCost: 10, parallelism: 4 };
/** Hashes of the previous scheme (scrypt, N=2^15): still verified, then upgraded; capped likewise. */
const SCRYPT_CAP = { N: 2 ** 17, r: 16, p: 4 };

export interface PasswordCheck {
  ok: boolean;
  /** The password was right and its hash should be made again with today's parameters. */
  rehash: boolean;
}

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password.normalize('NFKC'), ARGON2);
}

export async function verifyPassword(password: string, stored: string): Promise<PasswordCheck> {
  const normalized = password.normalize('NFKC');
  if (stored.startsWith('$argon2')) {
    const params = Object.fromEntries([...stored.matchAll(/([mtp])=(\d+)/g)].map(([, key, value]) => [key, Number(value)]));
    if (!(params.m! <= ARGON2_CAP.memoryCost && params.t! <= ARGON2_CAP.timeCost && params.p! <= ARGON2_CAP.parallelism)) return { ok: false, rehash: false };
    const ok = await argon2.verify(stored, normalized).catch(() => false);
    return { ok, rehash: ok && argon2.needsRehash(stored, ARGON2) };
  }
  if (stored.startsWith('scrypt$')) {
    const ok = await verifyScrypt(normalized, stored);
    return { ok, rehash: ok };
  }
  return { ok: false, rehash: false };
}

/** `scrypt$N$r$p$salt$hash`, salt and hash in base64url. */
async function verifyScrypt(password: string, stored: string): Promise<boolean> {
  const [, n, r, p, salt, hash] = stored.split('$');
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  if (!salt || !hash || !(params.N <= SCRYPT_CAP.N && params.r <= SCRYPT_CAP.r && params.p <= SCRYPT_CAP.p)) return false;
  const expected = Buffer.from(hash, 'base64url');
  const options: ScryptOptions = { ...params, maxmem: 256 * 1024 * 1024 };
  const actual = await new Promise<Buffer>((resolve, reject) =>
    scrypt(password, Buffer.from(salt, 'base64url'), expected.length, options, (err, key) => (err ? reject(err) : resolve(key))),
  ).catch(() => null);
  return actual !== null && actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Checked against when the e-mail is unknown, so both answers take the same time. */
export const DUMMY_HASH_PROMISE = hashPassword(randomBytes(16).toString('base64url'));
