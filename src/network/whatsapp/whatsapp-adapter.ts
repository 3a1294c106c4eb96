import type { NetworkAdapter, ReportSink } from "../network.js";
import { readThroughput, sendTemplate, type GraphOptions } from "./graph-client.js";
import { fetchMedia } from "./media.js";
import { createWhatsAppWebhookRoutes } from "./webhook.js";

/**
 * The WhatsApp Business Cloud API adapter (NETWORK=whatsapp): template sends
 * over HTTPS to the Graph API, media downloads (files uploaded in forms), a
 * number's throughput level (read by its phone number ID; none without one), and
 * the callback endpoint on the public port whose reports go to `sink`.
 */
export function createWhatsAppAdapter(options: GraphOptions & { appSecret: string; verifyToken: string }, sink: ReportSink): NetworkAdapter {
  return {
    name: "whatsapp",
    send: (message) => sendTemplate(options, message),
    fetchMedia: (media) => fetchMedia(options, media),
    readThroughput: async (number) => (number.phoneNumberId ? readThroughput(options, number.phoneNumberId) : null),
    httpRoutes: createWhatsAppWebhookRoutes({ appSecret: options.appSecret, verifyToken: options.verifyToken, sink }),
  };
}
