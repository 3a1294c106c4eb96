import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { getOption, type DescMethod } from "@bufbuild/protobuf";
import { required_scope } from "../../gen/messaging/v1/options_pb.js";
import { apiError, describeError, isDuplicateKeyError, toConnectError } from "../shared/errors.js";
import type { Logger } from "../shared/logger.js";
import { requestStateKey } from "./request-state.js";

/*
 * Interceptors of every RPC, whichever protocol carried it: Connect, gRPC and
 * gRPC-Web through the Connect router, REST through the gateway, which calls
 * the same chain. Order (outermost first): outcome, refusal, scope.
 */

/**
 * The interceptors of the public port, outermost first: outcome, refusal,
 * scope (the server adds its input checks inside them). The conformance
 * suite's test server runs the same list (test/conformance/server.ts).
 */
export function publicInterceptors(logger: Logger): Interceptor[] {
  return [outcomeInterceptor(logger), refusalInterceptor, scopeInterceptor];
}

/**
 * Outermost: records the operation and the answered error code on the
 * RequestState, and turns anything that is not a ConnectError, thrown by the
 * handler or while a response stream is read, into `internal` (the cause is
 * logged with the request id, never sent), for a MongoDB duplicate key into
 * `conflict`, and for a call aborted first (its deadline passed, the client
 * went away) into the abort's own error (`deadline_exceeded`, `canceled`).
 */
export function outcomeInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const state = req.contextValues.get(requestStateKey);
    if (state) state.operation = `${req.service.typeName}/${req.method.name}`;
    let res: Awaited<ReturnType<typeof next>>;
    try {
      res = await next(req);
    } catch (err) {
      throw answeredError(err, req, logger);
    }
    if (res.stream) {
      // The response objects of the router and the gateway are plain objects: the stream is replaced in place.
      const messages = res.message;
      (res as { message: AsyncIterable<unknown> }).message = (async function* () {
        try {
          yield* messages;
        } catch (err) {
          throw answeredError(err, req, logger);
        }
      })();
    }
    return res;
  };
}

/** The error a call answers for `err` (see outcomeInterceptor), recorded on its RequestState. */
function answeredError(err: unknown, req: Parameters<Parameters<Interceptor>[0]>[0], logger: Logger): ConnectError {
  const state = req.contextValues.get(requestStateKey);
  let error: ConnectError;
  if (err instanceof ConnectError) {
    error = err;
  } else if (req.signal.aborted) {
    // The call ended first (its deadline passed, or the client went away): whatever the handler threw
    // on that account is the call's end, not a fault of the handler.
    error = ConnectError.from(req.signal.reason);
  } else if (isDuplicateKeyError(err)) {
    error = apiError("conflict", "A resource with the same unique value already exists");
  } else {
    logger.error({ err, requestId: state?.requestId, operation: state?.operation }, "unexpected error in handler");
    error = apiError("internal", `Internal error; quote request id ${state?.requestId ?? "(none)"} when reporting it`);
  }
  if (state) state.errorCode = describeError(error).code;
  return error;
}

/** Throws the refusal admission decided for this request (invalid key, rate limit …), if any. */
export const refusalInterceptor: Interceptor = (next) => async (req) => {
  const refusal = req.contextValues.get(requestStateKey)?.refusal;
  if (refusal) throw toConnectError(refusal);
  return next(req);
};

const scopeCache = new WeakMap<DescMethod, string>();

/**
 * Scope an RPC needs: its (messaging.v1.required_scope) option, or "" when
 * any valid key may call it.
 */
export function requiredScope(method: DescMethod): string {
  let scope = scopeCache.get(method);
  if (scope === undefined) {
    scope = getOption(method, required_scope);
    scopeCache.set(method, scope);
  }
  return scope;
}

/**
 * Refuses with insufficient_scope when the authenticated key lacks the
 * scope the method declares (spec §Authentication 4). The error names the
 * scope needed and the scopes held, in the message and in the details
 * (`required_scope`, `held_scopes` comma-separated).
 */
export const scopeInterceptor: Interceptor = (next) => async (req) => {
  const needed = requiredScope(req.method);
  if (needed !== "") {
    const principal = req.contextValues.get(requestStateKey)?.principal;
    const held = principal?.scopes ?? [];
    if (!held.includes(needed)) {
      const heldText = held.length > 0 ? held.join(", ") : "none";
      throw apiError(
        "insufficient_scope",
        `This operation needs the scope ${needed}; the key holds: ${heldText}`,
        { required_scope: needed, held_scopes: held.join(",") },
      );
    }
  }
  return next(req);
};
