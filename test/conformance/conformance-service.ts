import { setTimeout as sleep } from "node:timers/promises";
import { create, toBinary, type DescMessage, type DescService, type Message, type Registry } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { ServiceRegistration } from "../../src/gateway/services.js";

/*
 * connectrpc.conformance.v1.ConformanceService, for the Connect conformance
 * suite's server tests (npm run conformance): each method answers as its
 * request's response definition says (headers, trailers, data, an error, a
 * delay) and echoes what it observed of the request (headers, timeout, the
 * request messages, the query of a Connect GET), as the suite's service.proto
 * and docs/testing_servers.md describe. Test-only: the descriptors come from
 * the suite's own protos at run time (a registry built by `buf build`), so
 * nothing of the suite is generated into gen/. `Unimplemented` has no
 * handler: the server's own "not available" answer is what the suite checks.
 */

const PACKAGE = "connectrpc.conformance.v1";

/** A Header of the suite's protos. */
interface Header {
  name: string;
  value: string[];
}

/** The parts of a response definition (UnaryResponseDefinition or StreamResponseDefinition) the service reads. */
interface ResponseDefinition {
  responseHeaders: Header[];
  responseTrailers: Header[];
  responseDelayMs: number;
  /** Unary: the oneof `response`; stream: `responseData` bytes and `error`. */
  response?: { case: "responseData" | "error" | undefined; value?: Uint8Array | ErrorDefinition };
  responseData?: Uint8Array | Uint8Array[];
  error?: ErrorDefinition;
}

/** The suite's Error message. */
interface ErrorDefinition {
  code: number;
  message?: string;
  details: { typeUrl: string; value: Uint8Array }[];
}

type RequestMessage = Message & { responseDefinition?: ResponseDefinition; fullDuplex?: boolean };

/** The conformance service over the suite's descriptors in `registry`. */
export function createConformanceService(registry: Registry): ServiceRegistration {
  const service = registry.getService(`${PACKAGE}.ConformanceService`) as DescService;
  const messageType = (name: string) => registry.getMessage(`${PACKAGE}.${name}`) as DescMessage;
  const requestInfoType = messageType("ConformancePayload.RequestInfo");
  const payloadType = messageType("ConformancePayload");

  /** A google.protobuf.Any of `message` (its type found by its $typeName). */
  const packAny = (message: Message) => {
    const desc = registry.getMessage(message.$typeName) as DescMessage;
    return { typeUrl: `type.googleapis.com/${desc.typeName}`, value: toBinary(desc, message) };
  };

  /** RequestInfo: the request headers, the deadline, `requests` as Any, and for a Connect GET its query. */
  function requestInfo(context: HandlerContext, requests: readonly Message[]): Message {
    const requestHeaders: Header[] = [];
    context.requestHeader.forEach((value, name) => requestHeaders.push({ name, value: [value] }));
    const url = new URL(context.url);
    const connectGetInfo =
      context.requestMethod === "GET" ? { queryParams: [...url.searchParams.keys()].filter((k, i, all) => all.indexOf(k) === i).map((name) => ({ name, value: url.searchParams.getAll(name) })) } : undefined;
    const timeoutMs = context.timeoutMs();
    return create(requestInfoType, {
      requestHeaders,
      timeoutMs: timeoutMs === undefined ? undefined : BigInt(timeoutMs),
      requests: requests.map(packAny),
      connectGetInfo,
    } as never);
  }

  function payload(data: Uint8Array | undefined, info: Message | undefined): Message {
    return create(payloadType, { data: data ?? new Uint8Array(0), requestInfo: info } as never);
  }

  function setHeaders(target: Headers, headers: readonly Header[] | undefined): void {
    for (const { name, value } of headers ?? []) for (const v of value) target.append(name, v);
  }

  /** The ConnectError of an error definition, with the request's RequestInfo added to its details. */
  function errorOf(definition: ErrorDefinition, info: Message | undefined): ConnectError {
    const error = new ConnectError(definition.message ?? "", definition.code as Code);
    for (const detail of definition.details) error.details.push({ type: detail.typeUrl.slice(detail.typeUrl.lastIndexOf("/") + 1), value: detail.value });
    if (info) error.details.push({ type: requestInfoType.typeName, value: toBinary(requestInfoType, info) });
    return error;
  }

  /** Waits `ms`, ending early (with the call) when the call is aborted. */
  const delay = (ms: number, context: HandlerContext) => (ms > 0 ? sleep(ms, undefined, { signal: context.signal }) : Promise.resolve());

  /** Unary, IdempotentUnary and ClientStream: one answer after every request was read. */
  async function answerOnce(requests: readonly RequestMessage[], context: HandlerContext, responseType: string): Promise<Message> {
    const definition = requests[0]?.responseDefinition;
    const info = requestInfo(context, requests);
    setHeaders(context.responseHeader, definition?.responseHeaders);
    setHeaders(context.responseTrailer, definition?.responseTrailers);
    await delay(definition?.responseDelayMs ?? 0, context);
    if (definition?.response?.case === "error") throw errorOf(definition.response.value as ErrorDefinition, info);
    const data = definition?.response?.case === "responseData" ? (definition.response.value as Uint8Array) : undefined;
    return create(messageType(responseType), { payload: payload(data, info) } as never);
  }

  /** ServerStream and half-duplex BidiStream: the responses of the definition, each after its delay, then its error. */
  async function* answerStream(requests: readonly RequestMessage[], context: HandlerContext, responseType: string): AsyncGenerator<Message> {
    const definition = requests[0]?.responseDefinition;
    const info = requestInfo(context, requests);
    setHeaders(context.responseHeader, definition?.responseHeaders);
    setHeaders(context.responseTrailer, definition?.responseTrailers);
    const data = (definition?.responseData ?? []) as Uint8Array[];
    for (const [i, bytes] of data.entries()) {
      await delay(definition?.responseDelayMs ?? 0, context);
      yield create(messageType(responseType), { payload: payload(bytes, i === 0 ? info : undefined) } as never);
    }
    if (definition?.error) throw errorOf(definition.error, data.length === 0 ? info : undefined);
  }

  /** Full-duplex BidiStream: a response after each request, echoing the requests since the last response. */
  async function* answerFullDuplex(first: RequestMessage, rest: AsyncIterator<RequestMessage>, context: HandlerContext): AsyncGenerator<Message> {
    const definition = first.responseDefinition;
    setHeaders(context.responseHeader, definition?.responseHeaders);
    setHeaders(context.responseTrailer, definition?.responseTrailers);
    const data = (definition?.responseData ?? []) as Uint8Array[];
    let request: RequestMessage | undefined = first;
    let sent = 0;
    while (request) {
      const info = requestInfo(context, [request]);
      if (sent >= data.length) {
        if (definition?.error) throw errorOf(definition.error, info);
      } else {
        await delay(definition?.responseDelayMs ?? 0, context);
        yield create(messageType("BidiStreamResponse"), { payload: payload(data[sent], info) } as never);
        sent++;
      }
      const next = await rest.next();
      request = next.done ? undefined : next.value;
    }
    for (; sent < data.length; sent++) {
      await delay(definition?.responseDelayMs ?? 0, context);
      yield create(messageType("BidiStreamResponse"), { payload: payload(data[sent], undefined) } as never);
    }
    if (definition?.error) throw errorOf(definition.error, undefined);
  }

  async function collect(requests: AsyncIterable<RequestMessage>): Promise<RequestMessage[]> {
    const all: RequestMessage[] = [];
    for await (const request of requests) all.push(request);
    return all;
  }

  const impl = {
    unary: (request: RequestMessage, context: HandlerContext) => answerOnce([request], context, "UnaryResponse"),
    idempotentUnary: (request: RequestMessage, context: HandlerContext) => answerOnce([request], context, "IdempotentUnaryResponse"),
    clientStream: async (requests: AsyncIterable<RequestMessage>, context: HandlerContext) => answerOnce(await collect(requests), context, "ClientStreamResponse"),
    serverStream: (request: RequestMessage, context: HandlerContext) => answerStream([request], context, "ServerStreamResponse"),
    async *bidiStream(requests: AsyncIterable<RequestMessage>, context: HandlerContext) {
      const iterator = requests[Symbol.asyncIterator]();
      const first = await iterator.next();
      if (first.done) {
        yield* answerStream([], context, "BidiStreamResponse");
        return;
      }
      if (first.value.fullDuplex) {
        yield* answerFullDuplex(first.value, iterator, context);
        return;
      }
      const all = [first.value];
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) all.push(next.value);
      yield* answerStream(all, context, "BidiStreamResponse");
    },
  };
  return { service, impl: impl as unknown as ServiceRegistration["impl"] };
}
