import { Injectable } from '@nestjs/common';

/**
 * Whether this instance is shutting down (SIGTERM received). Readiness answers 503 from that
 * moment, while requests are still served for SHUTDOWN_DELAY_SECONDS: a load balancer checking
 * readiness stops sending new requests before the drain closes any connection (main.ts).
 */
@Injectable()
export class ShutdownState {
  stopping = false;
}
