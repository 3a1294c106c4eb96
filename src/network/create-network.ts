import type { Platform } from "../capability.js";
import type { NetworkAdapter, ReportSink } from "./network.js";
import { createSimulator, type Simulator } from "./simulator.js";
import { createWhatsAppAdapter } from "./whatsapp/whatsapp-adapter.js";

/**
 * Builds the network adapter NETWORK chooses, handing its reports to `sink`;
 * `owner` names this process in the simulator's leases.
 */
export function createNetwork(platform: Platform, sink: ReportSink, owner: string): { network: NetworkAdapter; simulator?: Simulator } {
  const { config, clock, logger, stores } = platform;
  if (config.network === "whatsapp") {
    const network = createWhatsAppAdapter(
      {
        baseUrl: config.whatsappGraphUrl,
        version: config.whatsappGraphVersion,
        accessToken: config.whatsappAccessToken as string,
        timeoutMs: config.whatsappRequestTimeoutMs,
        appSecret: config.whatsappAppSecret as string,
        verifyToken: config.whatsappVerifyToken as string,
      },
      sink,
    );
    return { network };
  }
  const simulator = createSimulator(
    {
      sentDelayMs: config.simulatorSentDelayMs,
      deliveredDelayMs: config.simulatorDeliveredDelayMs,
      readDelayMs: config.simulatorReadDelayMs,
      outOfOrderPercent: config.simulatorOutOfOrderPercent,
      clock,
      logger,
      media: stores.simulatorMedia,
      reports: stores.simulatorReports,
      owner,
      leaseMs: config.recoveryAgeMs,
      claimIntervalMs: config.queueClaimIntervalMs,
      limits: config.simulatorLimits ? stores.simulatorLimits : null,
    },
    sink,
  );
  return { network: simulator, simulator };
}
