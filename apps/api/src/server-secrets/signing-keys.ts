import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { calculateJwkThumbprint, type CryptoKey, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { Clock } from '../common/clock.js';
import { open, seal } from '../common/sealed.js';
import { ServerSecrets } from './server-secrets.js';
import { ServerSecretsRepository } from './server-secrets.repository.js';
import type { Tx } from '../database/tx.js';
import { UnitOfWork } from '../database/unit-of-work.js';

/** ECDSA on P-256 with SHA-256: small keys and signatures, and every OpenID Connect library verifies it. */
export const ID_TOKEN_SIGNING_ALG = 'ES256';

/** How long an ID token lives: the longest an old key must stay published after it stops signing. */
export const ID_TOKEN_TTL_SECONDS = 3600;

/** The schedule: a key older than this is replaced by a new one at the next signature (`main.js rotate-keys` does it at once). */
export const SIGNING_KEY_ROTATION_SECONDS = 30 * 24 * 3600;

/**
 * After a key stops signing (a newer one was made), it stays in the JWKS until every ID token it
 * signed has expired: the ID tokens' lifetime, and a margin for a signature that read the key just
 * before the rotation committed and for the verifiers' clocks.
 */
export const RETIRED_KEY_PUBLISHED_SECONDS = ID_TOKEN_TTL_SECONDS + 300;

/** `server_secrets` names of the signing keys: the prefix, then the key's id (its RFC 7638 thumbprint). */
const KEY_PREFIX = 'id-token-key:';
/** The server secret the private keys are sealed with (common/sealed.ts), bound to each key's id. */
const SEALING_SECRET = 'id-token-keys';
const PURPOSE = 'id-token-signing-key';
/** The advisory lock of a rotation ('prik'): one replica makes the new key, the others then read it. */
const ROTATION_LOCK = 0x7072696b;

interface StoredKey {
  alg: typeof ID_TOKEN_SIGNING_ALG;
  /** The public half, as the JWKS publishes it. */
  publicJwk: JWK;
  /** The private half's JWK, sealed (base64url). */
  sealed: string;
}

interface KeyRow {
  kid: string;
  stored: StoredKey;
  createdAt: Date;
}

/** The key that signs now. */
export interface SigningKey {
  kid: string;
  alg: typeof ID_TOKEN_SIGNING_ALG;
  privateKey: CryptoKey;
}

/** What a rotation did. */
export interface Rotation {
  /** The new key, which signs from now on. */
  kid: string;
  /** The keys still published besides it (retired, until the tokens they signed expire). */
  stillPublished: string[];
  /** Keys retired long enough that nothing they signed is valid any more: deleted. */
  deleted: string[];
}

/**
 * The keys ID tokens are signed with (issue #33): kept in `server_secrets`, the private half
 * sealed, each with a `kid`, so every replica signs with the same current key and publishes the
 * same JWKS, read from the database each time (a rotation by any replica or by `main.js
 * rotate-keys` shows at once everywhere; only the imported private keys, which never change for
 * a kid, are kept in memory). The newest key signs; a key older than SIGNING_KEY_ROTATION_SECONDS
 * is replaced at the next signature; a replaced key stays published for
 * RETIRED_KEY_PUBLISHED_SECONDS and is then deleted by the next rotation.
 */
@Injectable()
export class SigningKeys {
  private readonly privateKeys = new Map<string, Promise<CryptoKey>>();
  private sealingSecret?: Promise<string>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly secrets: ServerSecrets,
    private readonly repository: ServerSecretsRepository,
    private readonly clock: Clock,
  ) {}

  /** The key to sign with now, made first when there is none or the newest is due for rotation. */
  async current(): Promise<SigningKey> {
    let [newest] = await this.keys();
    if (!newest || this.isDue(newest)) {
      await this.rotate({ onlyIfDue: true });
      [newest] = await this.keys();
    }
    return { kid: newest!.kid, alg: ID_TOKEN_SIGNING_ALG, privateKey: await this.privateKey(newest!) };
  }

  /** The JWKS: the signing key, and every retired key whose ID tokens may still be valid. */
  async publishedKeys(): Promise<{ keys: JWK[] }> {
    return { keys: this.published(await this.keys()).map((key) => key.stored.publicJwk) };
  }

  /**
   * Makes a new key, which signs from now on (the `rotate-keys` command, or the schedule), and
   * deletes the keys no longer published; under an advisory lock, so of replicas due at once one
   * makes it and the others find it made.
   */
  async rotate(options: { onlyIfDue?: boolean } = {}): Promise<Rotation> {
    // Read before the transaction: it may have to be made, on a connection of its own, and the
    // embedded database's pool has one (the transaction would wait on itself until DATABASE_TIMEOUT_MS).
    const sealing = await this.sealing();
    return this.uow.run(async (tx) => {
      await this.repository.lockForTransaction(tx, ROTATION_LOCK);
      const keys = await this.keys(tx);
      const newest = keys[0];
      if (options.onlyIfDue && newest && !this.isDue(newest)) return this.describe(newest.kid, keys, []);
      const now = this.clock.now();
      // Newest first by creation: a key made in the same millisecond as the last one still comes after it.
      const createdAt = new Date(Math.max(now.getTime(), (newest?.createdAt.getTime() ?? 0) + 1));
      const made = await this.generate(tx, createdAt, sealing);
      const all = [made, ...keys];
      const kept = new Set(this.published(all).map((key) => key.kid));
      const deleted = all.filter((key) => !kept.has(key.kid)).map((key) => key.kid);
      if (deleted.length) await this.repository.deleteNames(tx, deleted.map((kid) => KEY_PREFIX + kid));
      return this.describe(made.kid, all, deleted);
    });
  }

  private describe(kid: string, keys: KeyRow[], deleted: string[]): Rotation {
    return { kid, stillPublished: this.published(keys).map((key) => key.kid).filter((other) => other !== kid), deleted };
  }

  private isDue(key: KeyRow): boolean {
    return this.clock.now().getTime() - key.createdAt.getTime() >= SIGNING_KEY_ROTATION_SECONDS * 1000;
  }

  /** `keys` newest first: the newest, and each older one while its successor is younger than the publication window. */
  private published(keys: KeyRow[]): KeyRow[] {
    const windowStart = this.clock.now().getTime() - RETIRED_KEY_PUBLISHED_SECONDS * 1000;
    return keys.filter((key, i) => i === 0 || keys[i - 1]!.createdAt.getTime() > windowStart);
  }

  private async keys(tx?: Tx): Promise<KeyRow[]> {
    const rows = await this.repository.listByPrefix(KEY_PREFIX, tx);
    return rows.map((row) => ({ kid: row.name.slice(KEY_PREFIX.length), stored: JSON.parse(row.value) as StoredKey, createdAt: row.createdAt }));
  }

  private async generate(tx: Tx, createdAt: Date, sealing: string): Promise<KeyRow> {
    const pair = await generateKeyPair(ID_TOKEN_SIGNING_ALG, { extractable: true });
    const publicJwk = await exportJWK(pair.publicKey);
    // The thumbprint names the key; a few random bytes keep two keys apart should a thumbprint ever repeat.
    const kid = `${await calculateJwkThumbprint(publicJwk)}.${randomBytes(3).toString('base64url')}`;
    const privateJwk = { ...(await exportJWK(pair.privateKey)), kid, alg: ID_TOKEN_SIGNING_ALG };
    const stored: StoredKey = {
      alg: ID_TOKEN_SIGNING_ALG,
      publicJwk: { ...publicJwk, kid, alg: ID_TOKEN_SIGNING_ALG, use: 'sig' },
      sealed: seal(sealing, kid, PURPOSE, privateJwk).toString('base64url'),
    };
    await this.repository.insertAt(tx, KEY_PREFIX + kid, JSON.stringify(stored), createdAt);
    this.privateKeys.set(kid, Promise.resolve(pair.privateKey));
    return { kid, stored, createdAt };
  }

  private privateKey(key: KeyRow): Promise<CryptoKey> {
    let imported = this.privateKeys.get(key.kid);
    if (!imported) {
      imported = this.sealing().then(async (secret) => {
        const jwk = open<JWK>(secret, key.kid, PURPOSE, Buffer.from(key.stored.sealed, 'base64url'));
        if (!jwk) throw new Error(`the signing key ${key.kid} does not open with this server's sealing secret`);
        return (await importJWK(jwk, ID_TOKEN_SIGNING_ALG)) as CryptoKey;
      });
      // A failure is not kept: the next signature tries again.
      imported.catch(() => this.privateKeys.delete(key.kid));
      this.privateKeys.set(key.kid, imported);
    }
    return imported;
  }

  private sealing(): Promise<string> {
    this.sealingSecret ??= this.secrets.get(SEALING_SECRET);
    this.sealingSecret.catch(() => (this.sealingSecret = undefined));
    return this.sealingSecret;
  }
}
