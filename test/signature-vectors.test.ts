import { readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
// Through the package's export, as a receiver's Node project imports it.
import { verifyWebhookSignature, WebhookSignatureError } from "messaging-service/webhooks/signature";
import { missingToolchain, runCommand } from "../src/codegen/toolchain.js";
import { projectRoot } from "../src/shared/project-root.js";
import { buildSignatureVectors, SIGNATURE_VECTORS_FILE, type SignatureVectors } from "../src/codegen/signature-vectors.js";

/*
 * One file of webhook-signature vectors (spec §Webhook signature 2-5),
 * written by the TypeScript signer, checked by the Node, Go and Python
 * verifiers. A language whose toolchain is missing is skipped with the
 * reason printed.
 */

const vectors = JSON.parse(await readFile(SIGNATURE_VECTORS_FILE, "utf8")) as SignatureVectors;
const goMissing = await missingToolchain("go");
const pythonMissing = await missingToolchain("python3");
if (goMissing) console.warn(`Skipping the Go signature vectors: ${goMissing}`);
if (pythonMissing) console.warn(`Skipping the Python signature vectors: ${pythonMissing}`);

describe("shared webhook signature vectors", () => {
  it("are what the TypeScript signer writes now (npm run generate)", () => {
    expect(vectors).toEqual(buildSignatureVectors());
    const names = vectors.vectors.map((v) => v.name);
    expect(new Set(names).size).toBe(names.length);
    expect(vectors.vectors.filter((v) => v.valid).length).toBeGreaterThan(0);
    expect(vectors.vectors.filter((v) => !v.valid).length).toBeGreaterThan(0);
  });

  it.each(vectors.vectors.map((v) => [v.name, v] as const))("Node verifier: %s", (_name, v) => {
    const verify = () =>
      verifyWebhookSignature(Buffer.from(v.body, "utf8"), v.header, v.secret, {
        now: new Date(v.now * 1000),
        toleranceSeconds: vectors.tolerance_seconds,
      });
    if (v.valid) {
      expect(verify()).toBe(true);
    } else {
      expect(verify).toThrow(WebhookSignatureError);
      expect(() => verify()).toThrow(expect.objectContaining({ reason: v.reason }));
    }
  });

  it.skipIf(goMissing)("Go verifier (src/webhooks/go): go test passes every vector", async () => {
    const result = await runCommand("go", ["test", "-count=1", "-v", "-run", "^TestVectors$", "./..."], {
      cwd: path.join(projectRoot, "src", "webhooks", "go"),
    });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const passed = result.stdout.split("\n").filter((line) => line.trim().startsWith("--- PASS: TestVectors/"));
    expect(passed).toHaveLength(vectors.vectors.length);
  }, 180_000);

  it.skipIf(pythonMissing)("Python verifier (src/webhooks/python): unittest passes every vector", async () => {
    const result = await runCommand("python3", ["-m", "unittest", "-v", "test_webhook_signature"], {
      cwd: path.join(projectRoot, "src", "webhooks", "python"),
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
    });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`checked ${vectors.vectors.length} vectors`);
  });
});
