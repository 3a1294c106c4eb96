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
 * Outermost: records the operation and the answered error code on the
 * RequestState, and turns anything that is not a ConnectError into
 * `internal` (the cause is logged with the request id, never sent) or, for a
 * MongoDB duplicate key, into `conflict`.
 */
export function outcomeInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const state = req.contextValues.get(requestStateKey);
    if (state) state.operation = `${req.service.typeName}/${req.method.name}`;
    try {
      return await next(req);
    } catch (err) {
      let error: ConnectError;
      if (err instanceof ConnectError) {
        error = err;
      } else if (isDuplicateKeyError(err)) {
        error = apiError("conflict", "A resource with the same unique value already exists");
      } else {
        logger.error({ err, requestId: state?.requestId, operation: state?.operation }, "unexpected error in handler");
        error = apiError("internal", `Internal error; quote request id ${state?.requestId ?? "(none)"} when reporting it`);
      }
      if (state) state.errorCode = describeError(error).code;
      throw error;
    }
  };
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
