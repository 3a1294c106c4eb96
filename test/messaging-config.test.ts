import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../src/config.js";

describe("messaging configuration", () => {
  it("defaults to the simulator at 1 credit per message", () => {
    expect(loadConfig({})).toMatchObject({
      network: "simulator",
      messagePriceCredits: 1,
      dispatchMaxAttempts: 8,
      whatsappGraphUrl: "https://graph.facebook.com",
      whatsappGraphVersion: "v23.0",
    });
  });

  it("needs the access token, app secret and verify token with NETWORK=whatsapp, naming each", () => {
    let error: unknown;
    try {
      loadConfig({ NETWORK: "whatsapp", WHATSAPP_APP_SECRET: "s" });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'WHATSAPP_ACCESS_TOKEN: must be set when NETWORK is "whatsapp" (got undefined)',
      'WHATSAPP_VERIFY_TOKEN: must be set when NETWORK is "whatsapp" (got undefined)',
    ]);
  });

  it("refuses bad values with their rule", () => {
    expect(() => loadConfig({ NETWORK: "sms", WHATSAPP_GRAPH_VERSION: "23", SIMULATOR_OUT_OF_ORDER_PERCENT: "150" })).toThrow(
      /NETWORK: must be "simulator" or "whatsapp" \(got "sms"\)[\s\S]*SIMULATOR_OUT_OF_ORDER_PERCENT: must be a whole number of percent from 0 to 100 \(got "150"\)[\s\S]*WHATSAPP_GRAPH_VERSION: must look like "v23.0" \(got "23"\)/,
    );
  });
});
