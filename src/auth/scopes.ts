/**
 * The scopes of the spec's table (§Authentication, Scopes): what an API key
 * may do. GET /v1/me needs none.
 */
export const SCOPES = [
  "senders:read",
  "templates:read",
  "messages:send",
  "messages:read",
  "webhooks:read",
  "flow_responses:read",
] as const;

/** One scope of the table. */
export type Scope = (typeof SCOPES)[number];

/** True when `value` is a scope of the table. */
export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
