import { timingSafeEqual, createHash } from "node:crypto";
import { getOption } from "@bufbuild/protobuf";
import type { Interceptor } from "@connectrpc/connect";
import { allow_anonymous } from "../../gen/messaging/console/v1/options_pb.js";
import { refusal, toConnectError, type DescribedError } from "../shared/errors.js";
import { requestStateKey, type RequestState } from "../gateway/request-state.js";
import { consoleActorKey } from "./console-access.js";
import type { NodeRequest } from "../gateway/node-http.js";
import type { SignInLimits } from "./sign-in-limits.js";
import type { ConsoleUserStore } from "./users/user-store.js";

/** The Origin a same-origin browser request of this console carries, by scheme, for its Host. */
function ownOrigins(req: NodeRequest): string[] {
  const host = req.headers.host ?? (req.headers as Record<string, string | undefined>)[":authority"];
  return host ? [`http://${host}`, `https://${host}`] : [];
}

/**
 * The refusal of a cross-site state-changing request (anything but GET and
 * HEAD): an `Origin` other than the console's own, or `Sec-Fetch-Site:
 * cross-site`. Requests without either (the CLI, curl, scripts) pass; the
 * web console's own calls carry its origin. With the session in a bearer
 * header rather than a cookie, this is a second line against cross-site
 * requests, after the browser's CORS checks.
 */
function crossSiteRefusal(req: NodeRequest): DescribedError | undefined {
  const method = (req.method ?? "GET").toUpperCase();
  if (method === "GET" || method === "HEAD") return undefined;
  const origin = req.headers.origin;
  const site = req.headers["sec-fetch-site"];
  if ((origin !== undefined && !ownOrigins(req).includes(origin)) || site === "cross-site") {
    return refusal("permission_denied", `Cross-site console requests are refused (Origin ${origin ?? "absent"}, Sec-Fetch-Site ${site ?? "absent"})`, {
      origin: origin ?? "",
    });
  }
  return undefined;
}

/**
 * Admission of the console port. `Authorization: Bearer <token>` where the
 * token is CONSOLE_TOKEN (the operator, for the CLI and automation;
 * compared in constant time on SHA-256 digests) or a session token `cs_…`
 * from Login (a console user with their roles). Anything else is refused
 * with `unauthenticated`, except for methods marked allow_anonymous.
 *
 * A wrong token counts as a failed sign-in of the client address (and, when
 * it is not a session token, of the console token's account): over the
 * limits of `limits`, every console-token attempt of that address, the
 * right token included, is refused with `rate_limited` and Retry-After.
 * Cross-site state-changing requests are refused with `permission_denied`
 * (crossSiteRefusal).
 */
export function createConsoleAdmission(consoleToken: string, users: ConsoleUserStore, limits: SignInLimits) {
  const expected = createHash("sha256").update(consoleToken).digest();
  return async (state: RequestState, req: NodeRequest): Promise<void> => {
    const crossSite = crossSiteRefusal(req);
    if (crossSite) {
      state.refusal = crossSite;
      return;
    }
    const header = req.headers.authorization ?? "";
    const token = /^Bearer\s+(\S+)$/i.exec(Array.isArray(header) ? (header[0] ?? "") : header)?.[1];
    if (!token) {
      state.refusal = refusal(
        "unauthenticated",
        "Missing console credentials; send 'Authorization: Bearer <CONSOLE_TOKEN or session token>'",
      );
      return;
    }
    const isSession = token.startsWith("cs_");
    const subjects = { address: state.clientAddress, account: isSession ? undefined : "console-token" };
    if (!isSession) {
      const limited = await limits.check(subjects);
      if (limited) {
        state.setHeader("retry-after", limited.details.retry_after_seconds as string);
        state.refusal = limited;
        return;
      }
      if (timingSafeEqual(createHash("sha256").update(token).digest(), expected)) {
        state.values.set(consoleActorKey, { kind: "operator" });
        return;
      }
    }
    const user = isSession ? await users.userOfSession(token) : null;
    if (!user) {
      await limits.recordFailure(subjects);
      state.refusal = refusal("unauthenticated", "The console token or session is not valid; sessions end after CONSOLE_SESSION_TTL_HOURS");
      return;
    }
    state.values.set(consoleActorKey, {
      kind: "user",
      userId: user._id,
      email: user.email,
      operator: user.operator,
      roles: new Map(Object.entries(user.roles)),
    });
  };
}

/**
 * Throws admission's refusal; methods marked (messaging.console.v1.allow_anonymous)
 * pass a missing or wrong token (`unauthenticated`), never the other refusals.
 */
export const consoleRefusalInterceptor: Interceptor = (next) => async (req) => {
  const state = req.contextValues.get(requestStateKey);
  const anonymous = state?.refusal?.code === "unauthenticated" && getOption(req.method, allow_anonymous);
  if (state?.refusal && !anonymous) throw toConnectError(state.refusal);
  return next(req);
};
