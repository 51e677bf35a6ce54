import { Injectable } from '@nestjs/common';

/** Whoever keeps verified tokens in memory (auth/'s VerifiedTokenCache). */
export interface RevocationSubscriber {
  evictToken(tokenId: string): void;
  evictUser(userId: string): void;
}

/**
 * Revocations this instance just committed, told at once to whoever remembers verified tokens,
 * so a revoked token is refused here on its very next use. Other instances learn of them from the
 * database's notifications (auth/revocation-listener.ts). It lets tokens/ tell auth/ without
 * importing it: auth/ sits above tokens/ and subscribes.
 */
@Injectable()
export class TokenRevocations {
  private readonly subscribers: RevocationSubscriber[] = [];

  subscribe(subscriber: RevocationSubscriber): void {
    this.subscribers.push(subscriber);
  }

  tokensRevoked(tokenIds: readonly string[]): void {
    for (const s of this.subscribers) for (const id of tokenIds) s.evictToken(id);
  }

  userRevoked(userId: string): void {
    for (const s of this.subscribers) s.evictUser(userId);
  }
}
