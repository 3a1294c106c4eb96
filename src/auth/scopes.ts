/**
 * The scopes of the spec's table (§Authentication, Scopes): what an API key
 * may do. GET /v1/me needs none. CreateApiKeyRequest.scopes allows exactly
 * these (api_keys.proto; test/contract-rules.test.ts checks the two agree).
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
