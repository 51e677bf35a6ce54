import { Module, type OnModuleInit } from '@nestjs/common';
import { EventsModule } from '../events/events.module.js';
import { OrganizationsModule } from '../organizations/organizations.module.js';
import { FamilyMembers } from '../tokens/family-members.js';
import { TokensModule } from '../tokens/tokens.module.js';
import { EventSource, StreamEventSource } from './event-source.js';
import { OutboundUrls } from './outbound-url.js';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WebhookSecrets } from './webhook-secrets.js';
import { WebhookSender } from './webhook-sender.js';
import { WebhooksController } from './webhooks.controller.js';
import { WebhooksRepository } from './webhooks.repository.js';
import { WebhooksService } from './webhooks.service.js';

/**
 * Outbound notifications (issue #46 items 3-4): an organization's signed webhooks, and the
 * back-channel logout tokens of OAuth clients that registered a URI, both through one durable
 * outbox (`webhook_deliveries`). Owns `webhooks` and `webhook_deliveries`. It attaches to
 * tokens/'s FamilyMembers so that every way a grant ends writes the logout tokens in its
 * transaction; oauth/ uses OutboundUrls to check a client's `backchannelLogoutUri`.
 */
@Module({
  imports: [OrganizationsModule, TokensModule, EventsModule],
  controllers: [WebhooksController],
  providers: [
    WebhooksRepository,
    WebhookDeliveriesRepository,
    WebhooksService,
    WebhookSecrets,
    OutboundUrls,
    WebhookDispatcher,
    WebhookSender,
    // The organization's stream of events/, behind the interface the dispatcher reads (event-source.ts).
    { provide: EventSource, useClass: StreamEventSource },
  ],
  exports: [WebhooksService, OutboundUrls],
})
export class WebhooksModule implements OnModuleInit {
  constructor(
    private readonly families: FamilyMembers,
    private readonly deliveries: WebhookDeliveriesRepository,
  ) {}

  onModuleInit(): void {
    // In the revoking transaction; the sender's poll (a second) finds it once committed.
    this.families.onGrantsEnded(async (tx, deviceLoginIds, now) => void (await this.deliveries.insertLogouts(tx, deviceLoginIds, now)));
  }
}
