import { timingSafeEqual, createHash } from "node:crypto";
import { getOption } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { allow_anonymous } from "../../gen/messaging/console/v1/options_pb.js";
import { refusal, toConnectError } from "../shared/errors.js";
import { requestStateKey, type RequestState } from "../gateway/request-state.js";
import type { NodeRequest } from "../gateway/rest-gateway.js";
import type { ConsoleUserStore } from "./users/user-store.js";

/**
 * Admission of the console port. `Authorization: Bearer <token>` where the
 * token is CONSOLE_TOKEN (the operator, for the CLI and automation;
 * compared in constant time on SHA-256 digests) or a session token `cs_…`
 * from Login (a console user with their roles). Anything else is refused
 * with `unauthenticated`, except for methods marked allow_anonymous.
 */
export function createConsoleAdmission(consoleToken: string, users: ConsoleUserStore) {
  const expected = createHash("sha256").update(consoleToken).digest();
  return async (state: RequestState, req: NodeRequest): Promise<void> => {
    const header = req.headers.authorization ?? "";
    const token = /^Bearer\s+(\S+)$/i.exec(Array.isArray(header) ? (header[0] ?? "") : header)?.[1];
    if (!token) {
      state.refusal = refusal(
        "unauthenticated",
        "Missing console credentials; send 'Authorization: Bearer <CONSOLE_TOKEN or session token>'",
      );
      return;
    }
    if (timingSafeEqual(createHash("sha256").update(token).digest(), expected)) {
      state.consoleActor = { kind: "operator" };
      return;
    }
    const user = token.startsWith("cs_") ? await users.userOfSession(token) : null;
    if (!user) {
      state.refusal = refusal("unauthenticated", "The console token or session is not valid; sessions end after CONSOLE_SESSION_TTL_HOURS");
      return;
    }
    state.consoleActor = {
      kind: "user",
      userId: user._id,
      email: user.email,
      operator: user.operator,
      roles: new Map(Object.entries(user.roles)),
    };
  };
}

/** Throws admission's refusal, except for methods marked (messaging.console.v1.allow_anonymous). */
export const consoleRefusalInterceptor: Interceptor = (next) => async (req) => {
  const state = req.contextValues.get(requestStateKey);
  if (state?.refusal && !getOption(req.method, allow_anonymous)) throw toConnectError(state.refusal);
  return next(req);
};
