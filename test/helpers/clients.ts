import * as grpc from "@grpc/grpc-js";
import { createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { create, fromBinary, toBinary, type DescMessage, type DescMethodServerStreaming, type DescMethodUnary, type DescService, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";

/** Answer of a REST call made with fetch. */
export interface RestAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON body (undefined when the body is not JSON). */
  json: any;
  text: string;
}

/** Calls the REST API with fetch; `key` becomes `Authorization: Bearer <key>`. */
export async function rest(
  baseUrl: string,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<RestAnswer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers["content-type"] ??= "application/json";
  const res = await fetch(baseUrl + path, { method, headers, body });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json, text };
}

/** Protocols of the Connect-node transports. */
export type ConnectProtocol = "connect-json" | "connect-binary" | "grpc-web" | "grpc";

/** A transport of `protocol` to `baseUrl` that sends `key` as bearer token. */
export function transportFor(protocol: ConnectProtocol, baseUrl: string, key?: string): Transport {
  const auth: Interceptor = (next) => (req) => {
    if (key !== undefined) req.header.set("authorization", `Bearer ${key}`);
    return next(req);
  };
  const common = { baseUrl, interceptors: [auth] };
  switch (protocol) {
    case "connect-json":
      return createConnectTransport({ ...common, httpVersion: "1.1" });
    case "connect-binary":
      return createConnectTransport({ ...common, httpVersion: "1.1", useBinaryFormat: true });
    case "grpc-web":
      return createGrpcWebTransport({ ...common, httpVersion: "1.1" });
    case "grpc":
      return createGrpcTransport({ ...common });
  }
}

/** A Connect client of `service` over `protocol`. */
export function clientFor<S extends DescService>(service: S, protocol: ConnectProtocol, baseUrl: string, key?: string): Client<S> {
  return createClient(service, transportFor(protocol, baseUrl, key));
}

/** Answer of a unary call made with @grpc/grpc-js. */
export interface GrpcJsAnswer<O extends DescMessage> {
  response?: MessageShape<O>;
  error?: grpc.ServiceError;
  /** Response headers (initial metadata). */
  headers: grpc.Metadata;
  /** Trailers (status metadata). */
  trailers: grpc.Metadata;
}

/**
 * Calls a unary method with @grpc/grpc-js, the reference gRPC
 * implementation, over HTTP/2 to `address` (host:port). Messages are
 * (de)serialized with the generated descriptors.
 */
export function grpcJsCall<I extends DescMessage, O extends DescMessage>(
  address: string,
  method: DescMethodUnary<I, O>,
  request: MessageInitShape<I>,
  metadata: Record<string, string> = {},
): Promise<GrpcJsAnswer<O>> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  return new Promise((resolve) => {
    let headers = new grpc.Metadata();
    let trailers = new grpc.Metadata();
    const call = client.makeUnaryRequest(
      `/${method.parent.typeName}/${method.name}`,
      (value: MessageShape<I>) => Buffer.from(toBinary(method.input, value)),
      (bytes: Buffer) => fromBinary(method.output, bytes),
      create(method.input, request),
      md,
      (error, response) => {
        // The status (and its trailers) arrives with or just before the callback.
        setImmediate(() => {
          client.close();
          resolve({ response: response ?? undefined, error: error ?? undefined, headers, trailers });
        });
      },
    );
    call.on("metadata", (m: grpc.Metadata) => (headers = m));
    call.on("status", (s: grpc.StatusObject) => (trailers = s.metadata));
  });
}

/** Answer of a server-streaming call made with @grpc/grpc-js. */
export interface GrpcJsStreamAnswer<O extends DescMessage> {
  messages: MessageShape<O>[];
  error?: grpc.ServiceError;
  headers: grpc.Metadata;
}

/**
 * Calls a server-streaming method with @grpc/grpc-js over HTTP/2 to
 * `address` (host:port) and collects every message of the stream.
 */
export function grpcJsServerStream<I extends DescMessage, O extends DescMessage>(
  address: string,
  method: DescMethodServerStreaming<I, O>,
  request: MessageInitShape<I>,
  metadata: Record<string, string> = {},
): Promise<GrpcJsStreamAnswer<O>> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  return new Promise((resolve) => {
    const messages: MessageShape<O>[] = [];
    let headers = new grpc.Metadata();
    let error: grpc.ServiceError | undefined;
    const call = client.makeServerStreamRequest(
      `/${method.parent.typeName}/${method.name}`,
      (value: MessageShape<I>) => Buffer.from(toBinary(method.input, value)),
      (bytes: Buffer) => fromBinary(method.output, bytes),
      create(method.input, request),
      md,
    );
    call.on("metadata", (m: grpc.Metadata) => (headers = m));
    call.on("data", (m: MessageShape<O>) => messages.push(m));
    call.on("error", (e: grpc.ServiceError) => (error = e));
    call.on("status", () =>
      setImmediate(() => {
        client.close();
        resolve({ messages, error, headers });
      }),
    );
  });
}
