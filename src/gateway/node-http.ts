import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { describeError, errorTable, type DescribedError } from "../shared/errors.js";
import type { RequestState } from "./request-state.js";

/*
 * The Node side of a request, for every module that answers one (the RPC
 * server, the REST gateway, admission, plain HTTP routes such as the network's
 * callbacks): the request and response types and their header and error
 * helpers. A leaf: it imports no other part of the gateway but the
 * RequestState's type.
 */

/** A request and response of either node:http or node:http2 (compatibility API). */
export type NodeRequest = IncomingMessage | Http2ServerRequest;
export type NodeResponse = ServerResponse | Http2ServerResponse;

/**
 * A plain HTTP endpoint on an RPC port, outside API-key admission (it
 * authenticates its caller itself, for example by a signature), logged in
 * the request log with protocol "http".
 */
export interface HttpRoute {
  /** HTTP method, upper case. */
  readonly method: string;
  /** Exact path, without query string. */
  readonly path: string;
  /** Answers the request; a throw becomes a 500 internal error. */
  handler(req: NodeRequest, res: NodeResponse, state: RequestState): Promise<void>;
}

/** A request's headers as fetch Headers (pseudo-headers of HTTP/2 left out, repeated values joined). */
export function headersOf(req: NodeRequest): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  return headers;
}

/** One header of a Node request as fetch Headers' get reads it (repeated values joined). */
export function headerOf(req: NodeRequest, name: string): string | null {
  const value = req.headers[name];
  return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
}

/**
 * The URL of a request, its target read as a path even when it starts with
 * "//" (new URL("//@/x", base) would read an authority there and throw).
 */
export function requestUrl(req: NodeRequest): URL {
  const target = req.url ?? "/";
  return new URL(`http://localhost${target.startsWith("/") ? target : `/${target}`}`);
}

/** Writes `body` as the JSON answer with `status` and, when given, `headers`. */
export function writeJson(res: NodeResponse, status: number, body: JsonValue, headers?: Headers): void {
  const text = JSON.stringify(body);
  headers?.forEach((value, name) => res.setHeader(name, value));
  res.setHeader("content-type", "application/json; charset=utf-8");
  res.setHeader("content-length", Buffer.byteLength(text));
  res.writeHead(status);
  res.end(text);
}

/**
 * Writes an error as REST JSON, `{"error":{"code","message","details","request_id"}}`, with the
 * HTTP status of the error table (README "Errors"), and records its code on `state`.
 */
export function writeRestError(res: NodeResponse, state: RequestState, error: ConnectError | DescribedError): void {
  const { code, message, details, violations } = error instanceof ConnectError ? describeError(error) : error;
  state.errorCode = code;
  const body: JsonObject = { ...details };
  if (violations.length > 0) body.field_violations = violations.map((v) => ({ field: v.field, description: v.description }));
  writeJson(res, errorTable[code].httpStatus, { error: { code, message, details: body, request_id: state.requestId } });
}
