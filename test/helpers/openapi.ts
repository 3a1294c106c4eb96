import { expect } from "vitest";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

/** A REST answer as the checks see it: status, headers and parsed JSON body. */
export interface DocumentedAnswer {
  status: number;
  headers: Headers;
  json: unknown;
}

/** Asserts REST answers against the OpenAPI document (gen/openapi/messaging.v1.openapi.json). */
export interface OpenApiChecker {
  /** Path template and lower-case method of the operation `operationId` (for example "getMessage"). */
  operation(operationId: string): { path: string; method: string };
  /**
   * Asserts that the operation documents the answer's status; that every
   * header its response declares as required is present and every declared
   * header present matches its schema; and that the body is valid against the
   * response's schema, with every object closed to undocumented fields.
   * Returns the name of that schema (for example "Message" or "Error").
   */
  expectDocumented(answer: DocumentedAnswer, path: string, method: string): string;
  /**
   * Asserts that the document's `webhooks` entry for `eventType` describes
   * `body` (a webhook event envelope), objects closed as above. Returns the
   * name of the envelope's schema.
   */
  expectDocumentedEvent(eventType: string, body: unknown): string;
}

/**
 * Makes the document's schemas strict for tests: an object schema that lists
 * properties (and does not itself allow others) refuses undocumented fields,
 * so an answer that grew a field the document lacks fails.
 */
function closeObjects(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(closeObjects);
  if (node === null || typeof node !== "object") return;
  const schema = node as Record<string, unknown>;
  if (schema.properties && schema.additionalProperties === undefined) schema.additionalProperties = false;
  Object.values(schema).forEach(closeObjects);
}

/** Makes an OpenApiChecker of `document` (the parsed OpenAPI 3.1 document; not changed). */
export function createOpenApiChecker(document: any): OpenApiChecker {
  const strict = structuredClone(document);
  closeObjects(strict.components.schemas);
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addFormat("int32", true).addFormat("int64", true);
  ajv.addSchema(strict, "openapi.json");
  const validator = (pointer: string): ValidateFunction => {
    const found = ajv.getSchema(`openapi.json#${pointer}`);
    if (!found) throw new Error(`no schema at ${pointer}`);
    return found;
  };
  /** Validates `value` against the component schema `ref` ("#/components/schemas/X"); returns X. */
  const expectValid = (ref: string, value: unknown): string => {
    const check = validator(ref.slice(1));
    expect(check(value), JSON.stringify(check.errors)).toBe(true);
    return ref.split("/").pop() as string;
  };
  const resolve = (node: any, kind: "responses" | "headers") => (node.$ref ? document.components[kind][node.$ref.split("/").pop()] : node);

  return {
    operation(operationId) {
      for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
        for (const [method, op] of Object.entries(item)) if (op.operationId === operationId) return { path, method };
      }
      throw new Error(`no operation ${operationId} in the document`);
    },
    expectDocumented(answer, path, method) {
      const declared = document.paths[path][method].responses[String(answer.status)];
      expect(declared, `${method} ${path} documents status ${answer.status}`).toBeDefined();
      const response = resolve(declared, "responses");
      for (const [name, ref] of Object.entries(response.headers ?? {})) {
        const header = resolve(ref, "headers");
        const value = answer.headers.get(name);
        if (value === null) {
          expect(header.required, `${name} is optional`).not.toBe(true);
          continue;
        }
        const schema = ajv.compile(header.schema);
        const typed = header.schema.type === "integer" && /^\d+$/.test(value) ? Number(value) : value;
        expect(schema(typed), `${name}: ${value} ${JSON.stringify(schema.errors)}`).toBe(true);
      }
      return expectValid(response.content["application/json"].schema.$ref, answer.json);
    },
    expectDocumentedEvent(eventType, body) {
      const webhook = document.webhooks?.[eventType]?.post;
      expect(webhook, `webhooks documents ${eventType}`).toBeDefined();
      return expectValid(webhook.requestBody.content["application/json"].schema.$ref, body);
    },
  };
}
