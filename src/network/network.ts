import type { Readable } from "node:stream";
import type { HttpRoute } from "../gateway/node-http.js";

/*
 * The messaging network is a port (README "Design" §8): the service hands it
 * template messages and hears back from it through inbound reports. Two
 * adapters implement it: the in-process simulator and the WhatsApp Business
 * Cloud API. Whatever the adapter, reports go through one function (see
 * src/messages/inbound.ts), so reconciliation and events are the same.
 */

/** An error as the network reports it, for example 131026 "Message undeliverable". */
export interface NetworkErrorInfo {
  /** The network's error code. */
  code: number;
  /** The network's title for the code. */
  title: string;
  /** Set when the service failed the message itself, code 0 (messaging.v1.MessageError.reason): "expired". */
  reason?: string;
}

/** A template message handed to the network. */
export interface OutboundTemplateMessage {
  /** Our message id (msg_<uuid>); echoed back by the network where it can (WhatsApp: biz_opaque_callback_data). */
  messageId: string;
  /** Recipient, digits with country code. */
  to: string;
  /** Sender number, digits with country code. */
  fromPhoneNumber: string;
  /** Sender's WhatsApp phone number ID, or null. */
  fromPhoneNumberId: string | null;
  /** Template name and language as approved on the network. */
  templateName: string;
  language: string;
  /** Body variables in the template's order, each with its value ("" for a left-out optional one). */
  parameters: { name: string; value: string }[];
  /** The flow the template carries and the token of this send, or null. */
  flow: { flowId: string; token: string } | null;
  /** The rendered body text (the simulator shows it; WhatsApp renders its own). */
  text: string;
  /** The template's category ("marketing", "utility", "authentication"): WhatsApp knows it from the template; the simulator acts on it. */
  templateCategory: string;
}

/**
 * The network's error as it states it (code 0 when it never answered: an
 * outage, a timeout, an answer that is not its own), and whether trying
 * again later may succeed. Named after its subclass.
 */
export class NetworkError extends Error {
  constructor(
    readonly info: NetworkErrorInfo,
    readonly retryable: boolean,
  ) {
    super(`${info.code} ${info.title}`);
    this.name = new.target.name;
  }
}

/**
 * Why a send did not go through. `retryable` errors (outages, throughput
 * limits, timeouts) are tried again with backoff; the others are permanent
 * rejections: the message fails and its credits are refunded.
 */
export class NetworkSendError extends NetworkError {}

/**
 * Why the network could not answer a question about a business number
 * (NetworkAdapter.readThroughput). `retryable` says whether asking again
 * later may answer.
 */
export class NetworkReadError extends NetworkError {}

/** A business number (a sender) as the network knows it. */
export interface BusinessNumber {
  /** Digits with country code. */
  phoneNumber: string;
  /** Its WhatsApp phone number ID, or null. */
  phoneNumberId: string | null;
}

/** A network-side status of an outbound message. */
export type ReportedStatus = "sent" | "delivered" | "read" | "failed";

/** The network says what happened to a message it accepted. */
export interface StatusReport {
  kind: "status";
  /** The network's id of the message (WhatsApp: wamid). */
  networkMessageId: string;
  /** Our message id when the network echoes it (WhatsApp: biz_opaque_callback_data), else undefined. */
  messageId?: string;
  status: ReportedStatus;
  /** When it happened on the network side. */
  occurredAt: Date;
  /** On failed: the network's error. */
  error?: NetworkErrorInfo;
}

/**
 * What an inbound message holds. A new kind (for example the forms issue's
 * interactive flow replies) is one more member here and one more parser in
 * the adapters; the inbound path stores whatever content it gets.
 */
export type InboundContent =
  | { type: "text"; text: string }
  | { type: "button"; text: string; payload: string }
  /**
   * A submitted form (WhatsApp: interactive nfm_reply). `responseJson` is the
   * network's response_json as JSON text: the fields, the flow_token and, for
   * uploaded files, arrays of media references (see src/flows/submission.ts).
   */
  | { type: "flow_response"; responseJson: string; body: string }
  | { type: "unsupported"; networkType: string };

/** Somebody wrote to one of the workspace's numbers. */
export interface InboundMessageReport {
  kind: "message";
  /** The network's id of the inbound message. */
  networkMessageId: string;
  /** Who wrote, digits with country code. */
  from: string;
  /** The number written to: its WhatsApp phone number ID and/or its digits. */
  to: { phoneNumberId?: string; phoneNumber?: string };
  /** The network's id of the message replied to, when it is a reply. */
  replyToNetworkMessageId?: string;
  occurredAt: Date;
  content: InboundContent;
}

/** Anything the network reports. */
export type NetworkReport = StatusReport | InboundMessageReport;

/** Where adapters hand their reports; resolves once the report is stored (so a callback may answer 200). */
export type ReportSink = (report: NetworkReport) => Promise<void>;

/**
 * A file the network holds for the service, as a submission names it
 * (WhatsApp Flows' PhotoPicker and DocumentPicker media).
 */
export interface MediaReference {
  /** The network's media id (WhatsApp: Graph API media id; simulator: its media store id). */
  id: string;
  /**
   * WhatsApp's encrypted form (media sent to a flow endpoint): the CDN URL of
   * the encrypted file and its encryption metadata, all base64 as Meta sends
   * them (https://developers.facebook.com/docs/whatsapp/flows/reference/media_upload).
   */
  encrypted?: {
    cdnUrl: string;
    encryptedHash: string;
    iv: string;
    encryptionKey: string;
    hmacKey: string;
    plaintextHash: string;
  };
}

/** A medium being downloaded from the network. */
export interface FetchedMedia {
  /** The file's bytes (decrypted where the network encrypts them). */
  body: Readable;
  /** Content type the network states, if any. */
  mimeType?: string;
  /** Size the network states, in bytes, if any (checked against the limit before reading). */
  sizeBytes?: number;
  /** SHA-256 the network states for the file, base64 or hex, if any (checked after reading). */
  sha256?: string;
}

/**
 * Why a medium could not be fetched. `retryable` ones (outages, timeouts)
 * are tried again later; the others (unknown medium, failed integrity
 * checks) are recorded on the file as its error.
 */
export class MediaFetchError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = "MediaFetchError";
  }
}

/** A messaging network adapter. */
export interface NetworkAdapter {
  /** "simulator" or "whatsapp". */
  readonly name: string;
  /**
   * Hands a template message to the network; resolves to the network's
   * message id once it accepted it.
   *
   * @throws NetworkSendError when the network refuses (retryable or not);
   *   any other throw counts as a retryable outage.
   */
  send(message: OutboundTemplateMessage): Promise<string>;
  /**
   * Starts downloading a medium a recipient uploaded (a file of a form
   * submission); resolves once the network answered with the file.
   *
   * @throws MediaFetchError (any other throw counts as a retryable outage).
   */
  fetchMedia(media: MediaReference): Promise<FetchedMedia>;
  /**
   * The throughput the network allows business number `number` now, in
   * messages per second (WhatsApp: the number's throughput level, STANDARD 80
   * and HIGH 1,000); null when the network states none for it (a level not
   * applicable or unknown to the adapter, or no WhatsApp phone number ID to
   * ask with). Optional: an adapter without it states none. The console
   * reads it once, when a sender is created without its own throughput
   * (README "Pacing").
   *
   * @throws NetworkReadError when the network cannot be asked or refuses the
   *   question (any other throw counts as an outage); callers fall back to
   *   WhatsApp's default.
   */
  readThroughput?(number: BusinessNumber): Promise<number | null>;
  /** Callback endpoints on the public port (WhatsApp's webhook). */
  readonly httpRoutes: readonly HttpRoute[];
  /** Stops timers (the simulator's pending reports). */
  stop?(): Promise<void>;
}

/** Display text of inbound content (the event's `text`), or null. */
export function inboundText(content: InboundContent): string | null {
  return content.type === "unsupported" || content.type === "flow_response" ? null : content.text;
}
