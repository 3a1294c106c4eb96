import { describe, expect, it } from "vitest";
import { ConfigError, DEFAULT_FLOW_FILE_TYPES, loadConfig } from "../src/config.js";

describe("forms configuration", () => {
  it("defaults to WhatsApp's 25 MiB per file, the DocumentPicker's types and 8 fetch attempts", () => {
    expect(loadConfig({})).toMatchObject({
      flowFileMaxBytes: 26_214_400,
      flowFileAllowedTypes: DEFAULT_FLOW_FILE_TYPES,
      flowFileFetchMaxAttempts: 8,
      flowFileFetchRetryBaseMs: 5000,
    });
    expect(DEFAULT_FLOW_FILE_TYPES).toContain("image/jpeg");
    expect(DEFAULT_FLOW_FILE_TYPES).toContain("application/pdf");
  });

  it("reads allowed types as a comma-separated list, lower-cased, with family and any wildcards", () => {
    expect(loadConfig({ FLOW_FILE_ALLOWED_TYPES: " image/* , Application/PDF,*/*" }).flowFileAllowedTypes).toEqual(["image/*", "application/pdf", "*/*"]);
  });

  it("refuses bad values naming each variable and its rule", () => {
    let error: unknown;
    try {
      loadConfig({ FLOW_FILE_MAX_BYTES: "0", FLOW_FILE_ALLOWED_TYPES: "jpeg,image/png", FLOW_FILE_FETCH_MAX_ATTEMPTS: "many" });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'FLOW_FILE_MAX_BYTES: must be a whole number of bytes from 1 to 1073741824 (got "0")',
      'FLOW_FILE_ALLOWED_TYPES: must be a comma-separated list of media types such as "image/jpeg,application/pdf", "image/*" or "*/*" (got "jpeg,image/png")',
      'FLOW_FILE_FETCH_MAX_ATTEMPTS: must be a whole number of attempts from 1 to 100 (got "many")',
    ]);
  });
});
