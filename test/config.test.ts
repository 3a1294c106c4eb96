import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";

describe("configuration from the environment", () => {
  it("has the documented defaults", () => {
    const config = loadConfig({ MONGODB_URI: "mongodb://db.example:27017/?replicaSet=rs0" });
    expect(config).toMatchObject({
      port: 8080,
      consolePort: 8081,
      consoleHost: "127.0.0.1",
      mongodbUri: "mongodb://db.example:27017/?replicaSet=rs0",
      role: "all",
      trustXForwardedFor: false,
      databaseCommandMetrics: false,
      heapGrowingPercent: 30,
      unauthenticatedRateLimitPerMin: 30,
      keyCacheTtlMs: 1000,
      requestLogRetentionDays: 30,
      webhookAllowPrivateTargets: false,
      webhookAllowHttpLoopback: false,
    });
  });

  it("decides the local-development defaults when MONGODB_URI is unset (the embedded database), unless given", () => {
    expect(loadConfig({})).toMatchObject({ mongodbUri: undefined, requestLogRetentionDays: 1, webhookAllowPrivateTargets: true, webhookAllowHttpLoopback: true });
    expect(loadConfig({ REQUEST_LOG_RETENTION_DAYS: "7", WEBHOOK_ALLOW_PRIVATE_TARGETS: "false", WEBHOOK_ALLOW_HTTP_LOOPBACK: "no" })).toMatchObject({
      requestLogRetentionDays: 7,
      webhookAllowPrivateTargets: false,
      webhookAllowHttpLoopback: false,
    });
  });

  it("names a bootstrap admin's missing half", () => {
    expect(() => loadConfig({ CONSOLE_ADMIN_EMAIL: "Root@Example.com" })).toThrow("CONSOLE_ADMIN_PASSWORD: must be set when CONSOLE_ADMIN_EMAIL is (got undefined)");
    expect(loadConfig({ CONSOLE_ADMIN_EMAIL: "Root@Example.com", CONSOLE_ADMIN_PASSWORD: "a-good-password-1" }).consoleAdminEmail).toBe("root@example.com");
  });

  it("reads values and treats empty ones as unset", () => {
    const config = loadConfig({ PORT: "9000", TRUST_X_FORWARDED_FOR: "true", MONGODB_URI: "", ROLE: "worker", DATABASE_COMMAND_METRICS: "true" });
    expect(config).toMatchObject({ port: 9000, trustXForwardedFor: true, mongodbUri: undefined, role: "worker", databaseCommandMetrics: true });
  });

  it("names every bad variable, its rule and the value given", () => {
    let error: unknown;
    try {
      loadConfig({ PORT: "eighty", KEY_CACHE_TTL_MS: "60000", ROLE: "boss", MONGODB_URI: "postgres://x", TRUST_X_FORWARDED_FOR: "maybe" });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'PORT: must be a whole number from 0 to 65535 (got "eighty")',
      'MONGODB_URI: must start with "mongodb://" or "mongodb+srv://" (got "postgres://x")',
      'ROLE: must be "all", "api" or "worker" (got "boss")',
      'TRUST_X_FORWARDED_FOR: must be "true" or "false" (got "maybe")',
      'KEY_CACHE_TTL_MS: must be a whole number of milliseconds from 0 to 1000 (got "60000")',
    ]);
    expect((error as Error).message).toMatch(/^Invalid configuration:\n  - PORT: /);
  });
});
