import {
  create,
  getOption,
  type DescField,
  type DescMessage,
  type DescMethod,
  type JsonObject,
  type JsonValue,
  type Message,
} from "@bufbuild/protobuf";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { http as httpRule } from "../../gen/google/api/annotations_pb.js";
import type { HttpBody } from "../../gen/google/api/httpbody_pb.js";
import { apiError, invalidArgument, violationsError, type FieldViolation } from "../shared/errors.js";
import { CallContext, chainInterceptors, type CallTarget } from "./call-context.js";
import { requestUrl, writeJson, writeRestError, type NodeRequest, type NodeResponse } from "./node-http.js";
import { compilePathTemplate, type PathTemplate } from "./path-template.js";
import type { RequestState } from "./request-state.js";
import { fromRestJson, toRestJson } from "../contract/rest-json.js";
import { jsonBodyRule, JsonTooDeepError, MAX_MESSAGE_BYTES, parseJsonBytes, protoKeyViolations, readUpTo, rpcInputKey } from "./rpc-input.js";
import type { ServiceRegistration } from "./services.js";

const HTTP_BODY = "google.api.HttpBody";

/** One REST route built from a google.api.http rule. */
interface Route extends CallTarget {
  httpMethod: string;
  template: PathTemplate;
  /** "" (no body), "*" (the whole request) or a top-level field name. */
  body: string;
  /** "" (the whole response) or a top-level field name. */
  responseBody: string;
}

/** Options of createRestGateway. */
export interface RestGatewayOptions {
  /** Services whose annotated methods become routes. */
  services: readonly ServiceRegistration[];
  /** The same interceptors the Connect router runs. */
  interceptors: readonly Interceptor[];
  /** Largest request body accepted, in bytes. */
  maxBodyBytes?: number;
}

/** The REST/JSON face of a set of services. */
export interface RestGateway {
  /** Method and path template of every route, for documentation and tests. */
  readonly routes: readonly { httpMethod: string; path: string; rpc: string }[];
  /**
   * Answers one request: runs the matching route through the interceptors
   * and the handler, or answers the admission refusal, 404 not_found for an
   * unknown route, 400 invalid_argument for a bad body or parameter.
   */
  handle(req: NodeRequest, res: NodeResponse, state: RequestState): Promise<void>;
}

/**
 * The REST bindings of a method from its google.api.http option (the rule and
 * its additional_bindings): HTTP method (upper case), path template, `body`
 * and `response_body`. Empty when the method has no rule. Also used by the
 * OpenAPI generator (src/codegen/openapi-document.ts), so both read rules alike.
 */
export function ruleOf(method: DescMethod) {
  const rule = getOption(method, httpRule);
  const bindings = [rule, ...rule.additionalBindings];
  return bindings.flatMap((b) => {
    const p = b.pattern;
    if (p.case === undefined) return [];
    const [verb, path] = p.case === "custom" ? [p.value.kind.toUpperCase(), p.value.path] : [p.case.toUpperCase(), p.value];
    return [{ httpMethod: verb, path, body: b.body, responseBody: b.responseBody || rule.responseBody }];
  });
}

function fieldByName(desc: DescMessage, name: string): DescField | undefined {
  return desc.fields.find((f) => f.name === name);
}

/** Sets `value` at a dotted path of snake_case names in a JSON object. */
function setPath(target: JsonObject, path: string[], value: JsonValue): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (next === null || typeof next !== "object" || Array.isArray(next)) node[key] = {};
    node = node[key] as JsonObject;
  }
  node[path[path.length - 1] as string] = value;
}

/** Reads a query parameter into JSON; repeated keys become an array. */
function addQuery(target: JsonObject, desc: DescMessage, key: string, value: string, violations: FieldViolation[]): void {
  const path = key.split(".");
  let message: DescMessage | undefined = desc;
  let field: DescField | undefined;
  for (const name of path) {
    field = message ? fieldByName(message, name) : undefined;
    if (!field) {
      violations.push({ field: key, description: "is not a known query parameter" });
      return;
    }
    message = field.fieldKind === "message" ? field.message : undefined;
  }
  let node: JsonValue = target;
  for (const name of path.slice(0, -1)) node = (node as JsonObject)[name] ?? null;
  const existing = node && typeof node === "object" && !Array.isArray(node) ? node[path[path.length - 1] as string] : undefined;
  if (field?.fieldKind === "list") {
    setPath(target, path, Array.isArray(existing) ? [...existing, value] : [value]);
  } else if (existing !== undefined) {
    violations.push({ field: key, description: "may be given once" });
  } else {
    setPath(target, path, value);
  }
}

/**
 * Reads a request body of at most `limit` bytes. A longer one is read to its
 * end and dropped (the client gets its answer once done sending).
 *
 * @throws ConnectError payload_too_large when the body is longer than `limit`.
 */
async function readBody(req: NodeRequest, limit: number): Promise<Buffer> {
  const body = await readUpTo(req as AsyncIterable<Buffer>, limit);
  if (!body) throw apiError("payload_too_large", `The request body is larger than ${limit} bytes`, { limit_bytes: String(limit) });
  return body;
}

/**
 * Builds the REST gateway of `services` from the google.api.http options of
 * their descriptors (README "Design" §2): path templates with nested fields,
 * `body: "*"` or a field, the other fields from query parameters (dotted
 * names for nested fields, repeated keys for lists), `response_body`, and
 * google.api.HttpBody for raw responses, unary or server-streamed (written
 * as one body). An annotated RPC added later needs no change here. Routes
 * with more literal segments win over general ones. The interceptors see a
 * unary request for every route.
 */
export function createRestGateway(options: RestGatewayOptions): RestGateway {
  const maxBodyBytes = options.maxBodyBytes ?? MAX_MESSAGE_BYTES;
  const invoke = chainInterceptors(options.interceptors);
  const routes: Route[] = [];
  for (const { service, impl } of options.services) {
    for (const method of service.methods) {
      const rawStream = method.methodKind === "server_streaming" && method.output.typeName === HTTP_BODY;
      if (method.methodKind !== "unary" && !rawStream) continue;
      const handler = (impl as unknown as Record<string, Route["handler"] | undefined>)[method.localName];
      if (!handler) continue;
      for (const binding of ruleOf(method)) {
        routes.push({
          httpMethod: binding.httpMethod,
          template: compilePathTemplate(binding.path),
          service,
          method,
          handler: handler.bind(impl),
          body: binding.body,
          responseBody: binding.responseBody,
          invoke,
        });
      }
    }
  }
  routes.sort((a, b) => b.template.specificity - a.template.specificity);

  function buildInput(route: Route, vars: Map<string, string>, url: URL, body: Buffer): Message {
    const violations: FieldViolation[] = [];
    let json: JsonObject = {};
    if (route.body !== "") {
      let parsed: JsonValue = {};
      if (body.length > 0) {
        try {
          parsed = parseJsonBytes(body);
        } catch (err) {
          if (err instanceof TypeError || err instanceof JsonTooDeepError) throw invalidArgument("(body)", jsonBodyRule(err));
          throw apiError("invalid_argument", `Request body is not valid JSON: ${(err as Error).message}`, {
            field: "(body)",
            rule: "must be valid JSON",
          });
        }
        const protoKeys = protoKeyViolations(route.body === "*" ? parsed : { [route.body]: parsed });
        if (protoKeys.length > 0) throw violationsError(protoKeys);
      }
      if (route.body === "*") {
        if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
          throw apiError("invalid_argument", "Request body must be a JSON object", { field: "(body)", rule: "must be a JSON object" });
        }
        json = parsed;
      } else {
        json[route.body] = parsed;
      }
    }
    if (route.body !== "*") {
      for (const [key, value] of url.searchParams) addQuery(json, route.method.input, key, value, violations);
    } else if ([...url.searchParams.keys()].length > 0) {
      violations.push({ field: [...url.searchParams.keys()].join(", "), description: "query parameters are not accepted here; send them in the body" });
    }
    for (const [path, value] of vars) setPath(json, path.split("."), value);
    const read = fromRestJson(route.method.input, json, { textValues: route.body === "" });
    if (!read.ok) violations.push(...read.violations);
    if (violations.length > 0 || !read.ok) throw violationsError(violations);
    return read.message;
  }

  async function handle(req: NodeRequest, res: NodeResponse, state: RequestState): Promise<void> {
    const url = requestUrl(req);
    const httpMethod = (req.method ?? "GET").toUpperCase();
    let route: Route | undefined;
    let vars: Map<string, string> | undefined;
    const allowed = new Set<string>();
    for (const candidate of routes) {
      const matched = candidate.template.match(url.pathname);
      if (!matched) continue;
      if (candidate.httpMethod === httpMethod) {
        route = candidate;
        vars = matched;
        break;
      }
      allowed.add(candidate.httpMethod);
    }
    if (!route || !vars) {
      // A matched route meets the refusal in the interceptors (some methods allow anonymous callers).
      if (state.refusal) return writeRestError(res, state, state.refusal);
      if (allowed.size === 0) return writeRestError(res, state, apiError("not_found", `No route for ${httpMethod} ${url.pathname}`, { method: httpMethod, path: url.pathname }));
      // RFC 9110 §15.5.6: a known path with another method is 405, with the methods it accepts in Allow.
      const methods = [...allowed].join(", ");
      res.setHeader("allow", methods);
      return writeRestError(res, state, apiError("method_not_allowed", `${httpMethod} is not allowed on ${url.pathname}; it accepts ${methods}`, { method: httpMethod, path: url.pathname, allow: methods }));
    }
    const found = route;
    state.operation = `${found.service.typeName}/${found.method.name}`;

    const context = new CallContext(found, "rest", httpMethod, url.href, state.values, req);
    res.once("close", () => {
      if (!res.writableFinished) context.clientGone();
    });

    try {
      let input: Message;
      try {
        const body = found.body !== "" ? await readBody(req, maxBodyBytes) : Buffer.alloc(0);
        input = buildInput(found, vars, url, body);
      } catch (err) {
        // The problem is answered by inputInterceptor, after admission and scope,
        // so that a caller without a valid key learns that first (as over RPC).
        const problem = err instanceof ConnectError ? err : apiError("invalid_argument", String(err));
        context.values.set(rpcInputKey, { problem });
        input = create(found.method.input);
      }
      const response = await context.invoke(input);
      const headers = () => context.responseHeaderOf(response);
      if (response.stream) await writeStream(res, response.message as AsyncIterable<HttpBody>, headers);
      else writeSuccess(res, found, response.message as Message, headers());
    } catch (err) {
      if (res.headersSent) res.destroy(err as Error);
      else writeRestError(res, state, ConnectError.from(err));
    }
  }

  /**
   * Writes a server stream of google.api.HttpBody as one raw body: the first
   * chunk's content type is the Content-Type; a handler may set
   * Content-Length and Content-Disposition in its response headers (read
   * once the first chunk has come). The first chunk is awaited before the
   * head, so an early error is still an ordinary error answer; a later one
   * cuts the connection.
   */
  async function writeStream(res: NodeResponse, chunks: AsyncIterable<HttpBody>, headers: () => Headers | undefined): Promise<void> {
    const iterator = chunks[Symbol.asyncIterator]();
    const first = await iterator.next();
    headers()?.forEach((v, name) => res.setHeader(name, v));
    res.setHeader("content-type", (!first.done && first.value.contentType) || "application/octet-stream");
    res.writeHead(200);
    const write = async (data: Uint8Array) => {
      if (!(res as NodeJS.WritableStream).write(data)) await new Promise((resolve) => res.once("drain", resolve));
    };
    if (!first.done) await write(first.value.data);
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) await write(next.value.data);
    res.end();
  }

  function writeSuccess(res: NodeResponse, route: Route, message: Message, headers: Headers | undefined): void {
    let desc = route.method.output;
    let value: Message | undefined = message;
    if (route.responseBody !== "") {
      const field = fieldByName(desc, route.responseBody);
      if (field?.fieldKind !== "message") throw new Error(`response_body ${route.responseBody} is not a message field`);
      desc = field.message;
      value = (message as unknown as Record<string, Message | undefined>)[field.localName];
    }
    if (desc.typeName === HTTP_BODY) {
      const body = (value ?? create(desc)) as HttpBody;
      headers?.forEach((v, name) => res.setHeader(name, v));
      res.setHeader("content-type", body.contentType || "application/octet-stream");
      res.setHeader("content-length", body.data.byteLength);
      res.writeHead(200);
      res.end(Buffer.from(body.data.buffer, body.data.byteOffset, body.data.byteLength));
      return;
    }
    writeJson(res, 200, value ? toRestJson(desc, value) : null, headers);
  }

  return {
    routes: routes.map((r) => ({ httpMethod: r.httpMethod, path: r.template.source, rpc: `${r.service.typeName}/${r.method.name}` })),
    handle,
  };
}
