import { randomBytes } from 'node:crypto';
import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
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

/** The schedule: a key signs this long, then its successor does (`main.js rotate-keys` replaces it at once). */
export const SIGNING_KEY_ROTATION_SECONDS = 30 * 24 * 3600;

/**
 * How long a scheduled key is published before it signs: far longer than a verifier keeps the
 * JWKS (it is served with max-age 300; jose's remote key set keeps it 10 minutes and refetches an
 * unknown kid only after a 30 s cooldown), so every verifier holds a key before its first token.
 */
export const NEXT_KEY_PUBLISHED_AHEAD_SECONDS = 24 * 3600;

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
  /**
   * When a scheduled key starts signing (epoch ms): NEXT_KEY_PUBLISHED_AHEAD_SECONDS after it was
   * made. Absent: it signed from its creation (the first key, `rotate-keys`, keys made before).
   */
  signsFrom?: number;
}

interface KeyRow {
  kid: string;
  stored: StoredKey;
  createdAt: Date;
  /** When it started (or starts) signing, if it is the newest such key then. */
  startsAt: number;
}

/**
 * Whether `key` may sign at `now`: a key without `signsFrom` signs from its creation whatever the
 * clocks say (a `rotate-keys` key made 1 ms after the newest is never "not yet").
 */
function started(key: KeyRow, now: number): boolean {
  return key.stored.signsFrom === undefined || key.stored.signsFrom <= now;
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
 * a kid, are kept in memory).
 *
 * - The first key is made at the first start (issue #43): a JWKS fetched before any sign-in
 *   already holds the key of the first ID token.
 * - The schedule publishes the next key NEXT_KEY_PUBLISHED_AHEAD_SECONDS before it signs: it is
 *   made at the first signature or JWKS read once the signing key is that close to
 *   SIGNING_KEY_ROTATION_SECONDS old, so no verifier meets a kid it was not shown already.
 * - `rotate-keys` makes a key that signs at once (an operator replacing a key that may have leaked).
 * - A replaced key stays published RETIRED_KEY_PUBLISHED_SECONDS after its successor started
 *   signing (every ID token it signed has expired by then), and is deleted by the next rotation.
 */
@Injectable()
export class SigningKeys implements OnApplicationBootstrap {
  private readonly privateKeys = new Map<string, Promise<CryptoKey>>();
  private sealingSecret?: Promise<string>;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly secrets: ServerSecrets,
    private readonly repository: ServerSecretsRepository,
    private readonly clock: Clock,
  ) {}

  /** The first key, before the first request: a verifier that fetches the JWKS at once finds it (several replicas: one makes it). */
  async onApplicationBootstrap(): Promise<void> {
    await this.onSchedule();
  }

  /** The key to sign with now (the next one made first, published only, when the schedule says so). */
  async current(): Promise<SigningKey> {
    const signing = this.signing(await this.onSchedule());
    return { kid: signing.kid, alg: ID_TOKEN_SIGNING_ALG, privateKey: await this.privateKey(signing) };
  }

  /** The JWKS: the next key once it is made, the signing key, and every retired key whose ID tokens may still be valid. */
  async publishedKeys(): Promise<{ keys: JWK[] }> {
    return { keys: this.published(await this.onSchedule()).map((key) => key.stored.publicJwk) };
  }

  /**
   * Makes a new key, which signs from now on (the `rotate-keys` command), and deletes the keys no
   * longer published; under an advisory lock, as the schedule's keys are made.
   */
  rotate(): Promise<Rotation> {
    return this.makeKey(() => true, { signsAtOnce: true });
  }

  /** The keys, newest first, after making the one the schedule asks for now, if any. */
  private async onSchedule(): Promise<KeyRow[]> {
    const keys = await this.keys();
    if (!this.nextIsDue(keys)) return keys;
    // The first key signs at once: nothing was published before it, so no verifier holds an older set.
    await this.makeKey((locked) => this.nextIsDue(locked), { signsAtOnce: keys.length === 0 });
    return this.keys();
  }

  /**
   * Makes a key if `stillWanted` of the keys read under the advisory lock, so of replicas due at
   * once one makes it and the others find it made; deletes the keys no longer published.
   */
  private async makeKey(stillWanted: (keys: KeyRow[]) => boolean, options: { signsAtOnce: boolean }): Promise<Rotation> {
    // Read before the transaction: it may have to be made, on a connection of its own, and the
    // embedded database's pool has one (the transaction would wait on itself until DATABASE_TIMEOUT_MS).
    const sealing = await this.sealing();
    return this.uow.run(async (tx) => {
      await this.repository.lockForTransaction(tx, ROTATION_LOCK);
      const keys = await this.keys(tx);
      if (!stillWanted(keys)) return this.describe(keys[0]!.kid, keys, []);
      const now = this.clock.now();
      // Newest first by creation: a key made in the same millisecond as the last one still comes after it.
      const createdAt = new Date(Math.max(now.getTime(), (keys[0]?.createdAt.getTime() ?? 0) + 1));
      const signsFrom = options.signsAtOnce || keys.length === 0 ? undefined : createdAt.getTime() + NEXT_KEY_PUBLISHED_AHEAD_SECONDS * 1000;
      const made = await this.generate(tx, createdAt, sealing, signsFrom);
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

  /**
   * Whether to make a key now: there is none, or the newest signs already and is within
   * NEXT_KEY_PUBLISHED_AHEAD_SECONDS of its rotation (a newest that does not sign yet is the next one, made).
   */
  private nextIsDue(keys: KeyRow[]): boolean {
    const newest = keys[0];
    if (!newest) return true;
    const now = this.clock.now().getTime();
    return started(newest, now) && now - newest.createdAt.getTime() >= (SIGNING_KEY_ROTATION_SECONDS - NEXT_KEY_PUBLISHED_AHEAD_SECONDS) * 1000;
  }

  /** `keys` newest first: the newest that has started signing (the oldest if none has, which only a clock set back shows). */
  private signing(keys: KeyRow[]): KeyRow {
    const now = this.clock.now().getTime();
    return keys.find((key) => started(key, now)) ?? keys[keys.length - 1]!;
  }

  /**
   * `keys` newest first: every key not signing yet, the signing one, and each older one while it
   * was replaced (a newer key started signing) less than RETIRED_KEY_PUBLISHED_SECONDS ago.
   */
  private published(keys: KeyRow[]): KeyRow[] {
    const now = this.clock.now().getTime();
    const windowStart = now - RETIRED_KEY_PUBLISHED_SECONDS * 1000;
    // When the keys seen so far (the newer ones) first signed: the moment the next older key stopped.
    let replacedAt = Infinity;
    return keys.filter((key) => {
      const published = replacedAt > windowStart;
      if (started(key, now)) replacedAt = Math.min(replacedAt, key.startsAt);
      return published;
    });
  }

  private async keys(tx?: Tx): Promise<KeyRow[]> {
    const rows = await this.repository.listByPrefix(KEY_PREFIX, tx);
    return rows.map((row) => {
      const stored = JSON.parse(row.value) as StoredKey;
      return { kid: row.name.slice(KEY_PREFIX.length), stored, createdAt: row.createdAt, startsAt: stored.signsFrom ?? row.createdAt.getTime() };
    });
  }

  private async generate(tx: Tx, createdAt: Date, sealing: string, signsFrom: number | undefined): Promise<KeyRow> {
    const pair = await generateKeyPair(ID_TOKEN_SIGNING_ALG, { extractable: true });
    const publicJwk = await exportJWK(pair.publicKey);
    // The thumbprint names the key; a few random bytes keep two keys apart should a thumbprint ever repeat.
    const kid = `${await calculateJwkThumbprint(publicJwk)}.${randomBytes(3).toString('base64url')}`;
    const privateJwk = { ...(await exportJWK(pair.privateKey)), kid, alg: ID_TOKEN_SIGNING_ALG };
    const stored: StoredKey = {
      alg: ID_TOKEN_SIGNING_ALG,
      publicJwk: { ...publicJwk, kid, alg: ID_TOKEN_SIGNING_ALG, use: 'sig' },
      sealed: seal(sealing, kid, PURPOSE, privateJwk).toString('base64url'),
      ...(signsFrom === undefined ? {} : { signsFrom }),
    };
    await this.repository.insertAt(tx, KEY_PREFIX + kid, JSON.stringify(stored), createdAt);
    this.privateKeys.set(kid, Promise.resolve(pair.privateKey));
    return { kid, stored, createdAt, startsAt: signsFrom ?? createdAt.getTime() };
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
