import type { DescMethod } from "@bufbuild/protobuf";
import { createContextKey, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { contractViolations } from "../contract/field-rules.js";
import { violationsError, type FieldViolation } from "../shared/errors.js";

/*
 * The contract's input rules (src/contract/field-rules.ts) enforced for every
 * protocol: REST through the gateway, Connect, gRPC and gRPC-Web through the
 * router, by one interceptor.
 */

/** RPCs whose handler answers the contract's violations together with the rules it checks itself (answerViolationsInHandler). */
const handlersAnswering = new WeakSet<DescMethod>();

/** Context value: the contract's violations of a request whose handler answers them (contractViolationsOf). */
const contractViolationsKey = createContextKey<readonly FieldViolation[]>([], { description: "contract violations" });

/**
 * Marks `method` as one whose handler checks rules that need the database
 * (the variables of a template) and answers them together with the
 * contract's, so that a request breaking both learns every violation at
 * once. validationInterceptor then hands the contract's violations to the
 * handler (contractViolationsOf) instead of refusing the request itself; the
 * handler must add them to its own and refuse before it changes anything.
 */
export function answerViolationsInHandler(method: DescMethod): void {
  handlersAnswering.add(method);
}

/** The contract's violations of the request of `context` (empty when it keeps every rule), for a method marked with answerViolationsInHandler. */
export function contractViolationsOf(context: HandlerContext): readonly FieldViolation[] {
  return context.values.get(contractViolationsKey);
}

/**
 * Innermost interceptor of both APIs: refuses a unary or server-streaming
 * request that breaks a rule of the contract with one `invalid_argument`
 * listing every violation (field path and rule), before the handler runs;
 * for a method marked with answerViolationsInHandler, the handler answers
 * them with its own. Client-streamed messages (the flow file upload) are
 * checked by their handler: their rules depend on the position in the
 * stream.
 */
export const validationInterceptor: Interceptor = (next) => async (req) => {
  if (!req.stream) {
    const violations = contractViolations(req.method.input, req.message);
    if (violations.length > 0) {
      if (!handlersAnswering.has(req.method)) throw violationsError(violations);
      req.contextValues.set(contractViolationsKey, violations);
    }
  }
  return next(req);
};
