import { createContextKey, type ContextValues, type HandlerContext } from "@connectrpc/connect";
import type { DescribedError, ErrorCode } from "../shared/errors.js";

/** Wire protocol of a request, as recorded in the request log. */
export type Protocol = "rest" | "connect" | "grpc" | "grpc-web" | "http";

/** The authenticated caller of the public API. */
export interface Principal {
  /** Workspace of the key (the account_id). Shape: UUID. */
  workspaceId: string;
  /** Key identifier. Shape: UUID. */
  apiKeyId: string;
  /** Name given to the key. */
  apiKeyName: string;
  /** Scopes the key holds. */
  scopes: readonly string[];
  /** Requests per minute allowed for the key. */
  rateLimitPerMin: number;
}

/**
 * What the service knows about one request while it runs, whatever the
 * protocol: set by the HTTP layer, completed by admission and interceptors,
 * and written to the request log when the response ends.
 */
export interface RequestState {
  /** `req_…`, sent back as the Request-Id header. */
  readonly requestId: string;
  /** When the request arrived. */
  readonly receivedAt: Date;
  /** process.hrtime.bigint() at arrival, for the duration. */
  readonly startedAt: bigint;
  /** Protocol, from the path and Content-Type. */
  readonly protocol: Protocol;
  /** HTTP method. */
  readonly httpMethod: string;
  /** Path without the query string. */
  readonly path: string;
  /** Client address (IPv4 or IPv6, IPv4-mapped addresses unwrapped). */
  readonly clientAddress: string;
  /** Full RPC name once known, for example "messaging.v1.AccountService/GetMe". */
  operation?: string;
  /** The caller, once authenticated. */
  principal?: Principal;
  /** Workspace of the key presented, even when the key is refused (for the request log). */
  workspaceId?: string;
  /** Key presented, even when refused (for the request log). */
  apiKeyId?: string;
  /**
   * The context values of the request's call (requestStateKey among them):
   * admission adds its own concern's values here (the console caller,
   * src/console/console-access.ts), and every protocol's call reads them.
   */
  readonly values: ContextValues;
  /** Why admission refused the request; answered instead of calling the handler. */
  refusal?: DescribedError;
  /** Code of the error answered, if any. */
  errorCode?: ErrorCode;
  /** A batch send's counts of items accepted and refused (for the request log), once answered. */
  batchCounts?: { accepted: number; refused: number };
  /** Sets a response header on whatever protocol answers (before the head is sent). */
  setHeader(name: string, value: string): void;
}

/** Context value under which handlers and interceptors find the RequestState. */
export const requestStateKey = createContextKey<RequestState | undefined>(undefined, {
  description: "request state",
});

/**
 * The RequestState of a handler's call.
 *
 * @throws Error when called outside a request served by the gateway (a bug).
 */
export function requestState(context: Pick<HandlerContext, "values">): RequestState {
  const state = context.values.get(requestStateKey);
  if (!state) throw new Error("request state missing: the call did not pass through the HTTP layer");
  return state;
}

/**
 * The authenticated caller of a handler's call.
 *
 * @throws Error when the call was not authenticated (a bug: admission runs first).
 */
export function principalOf(context: Pick<HandlerContext, "values">): Principal {
  const principal = requestState(context).principal;
  if (!principal) throw new Error("principal missing: admission did not run");
  return principal;
}
