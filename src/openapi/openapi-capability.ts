import { readFileSync } from "node:fs";
import path from "node:path";
import type { Capability } from "../capability.js";
import { projectRoot } from "../shared/project-root.js";

/** The generated OpenAPI 3.1 document of the public REST API (`npm run generate` writes it). */
export const OPENAPI_DOCUMENT = path.join(projectRoot, "gen", "openapi", "messaging.v1.openapi.json");

/**
 * GET /openapi.json on the public port: the OpenAPI 3.1 document of the REST
 * surface (/v1), as generated from the protos by src/codegen/openapi-document.ts.
 * No API key is needed; the answer is the committed file, read once at start-up.
 *
 * @throws Error at start-up when the document is missing or not JSON.
 */
export function createOpenApiCapability(): Capability {
  const body = readFileSync(OPENAPI_DOCUMENT);
  JSON.parse(body.toString("utf8"));
  return {
    name: "openapi",
    httpRoutes: [
      {
        method: "GET",
        path: "/openapi.json",
        async handler(_req, res) {
          res.setHeader("content-type", "application/json; charset=utf-8");
          res.setHeader("content-length", body.byteLength);
          res.writeHead(200);
          res.end(body);
        },
      },
    ],
  };
}
