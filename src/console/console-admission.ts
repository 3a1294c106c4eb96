import { timingSafeEqual, createHash } from "node:crypto";
import { refusal } from "../shared/errors.js";
import type { RequestState } from "../gateway/request-state.js";
import type { NodeRequest } from "../gateway/rest-gateway.js";

/**
 * Admission of the console port: `Authorization: Bearer <CONSOLE_TOKEN>`
 * makes the caller the operator. Anything else is refused with
 * `unauthenticated`. The comparison is in
 * constant time (on SHA-256 digests, so lengths never leak).
 */
export function createConsoleAdmission(consoleToken: string) {
  const expected = createHash("sha256").update(consoleToken).digest();
  return async (state: RequestState, req: NodeRequest): Promise<void> => {
    const header = req.headers.authorization ?? "";
    const match = /^Bearer\s+(\S+)$/i.exec(Array.isArray(header) ? (header[0] ?? "") : header);
    const given = createHash("sha256").update(match?.[1] ?? "").digest();
    if (!match || !timingSafeEqual(given, expected)) {
      state.refusal = refusal(
        "unauthenticated",
        match ? "The console token is wrong" : "Missing console token; send 'Authorization: Bearer <CONSOLE_TOKEN>'",
      );
      return;
    }
    state.consoleActor = { kind: "operator" };
  };
}
