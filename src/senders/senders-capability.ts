import { SenderService as ConsoleSenderService } from "../../gen/messaging/console/v1/senders_pb.js";
import { SenderService } from "../../gen/messaging/v1/senders_pb.js";
import type { Capability, Platform } from "../capability.js";
import type { NetworkAdapter } from "../network/network.js";
import { registerService } from "../gateway/services.js";
import { createConsoleSenderService, createPublicSenderService } from "./sender-services.js";
import type { SenderStore } from "./sender-store.js";

/**
 * Senders: GET /v1/senders and console management (messaging.console.v1.SenderService), and the gauges of every
 * sender's queue, read from the database at each scrape (README "Metrics and access log"). `network` is the adapter
 * NETWORK chooses, asked for the throughput of a sender created without one.
 */
export function createSendersCapability(platform: Platform, senders: SenderStore, network: NetworkAdapter): Capability {
  const { clock, logger } = platform;
  const messages = platform.stores.messages;
  platform.metrics.gaugesByLabel(
    "sender_id",
    [
      { name: "msgsvc_sender_queue_depth", help: "Messages queued per sender number: accepted (a scheduled send from its send_at on) and not yet handed to the network." },
      { name: "msgsvc_sender_queue_oldest_wait_seconds", help: "How long the message queued longest per sender number has waited, in seconds." },
    ],
    async () => {
      const now = clock.now();
      const values = new Map<string, number[]>();
      for (const [senderId, q] of await messages.queueDepths(now)) {
        values.set(senderId, [q.depth, q.oldestQueuedAt ? Math.max(0, now.getTime() - q.oldestQueuedAt.getTime()) / 1000 : 0]);
      }
      return values;
    },
  );
  return {
    name: "senders",
    publicServices: [registerService(SenderService, createPublicSenderService(senders))],
    consoleServices: [registerService(ConsoleSenderService, createConsoleSenderService({ senders, messages, workspaces: platform.workspaces, network, clock, logger }))],
    ensureIndexes: () => senders.ensureIndexes(),
  };
}
