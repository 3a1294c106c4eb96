import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { projectRoot } from "../shared/project-root.js";
import { writeSignatureVectors } from "./signature-vectors.js";
import { ensureGoTools, ensureProtovalidateProto, ensurePythonVenv, mustRun } from "./toolchain.js";

/*
 * `npm run generate`: everything generated from the protos, in order.
 * 1. gen/ TypeScript (buf.gen.yaml, protoc-gen-es; its clean empties gen/).
 * 2. gen/go (protoc-gen-go, protoc-gen-go-grpc) and gen/openapi (our plugin),
 *    with src/codegen/buf.gen.clients.yaml; then gen/go/go.mod and go.sum.
 * 3. gen/python: buf builds an image of messaging/v1 with its imports, and the
 *    protoc bundled in grpcio-tools writes messages (_pb2), type stubs (.pyi)
 *    and gRPC stubs (_pb2_grpc) from it. buf cannot run that protoc as a
 *    plugin: gRPC's Python generator exists only inside grpcio-tools.
 * 4. gen/python/messaging_rest: a REST client generated from the OpenAPI
 *    document of step 2 by openapi-python-client (src/codegen/openapi-python-client.yaml),
 *    formatted by its pinned ruff.
 * 5. test/webhook-signature-vectors.json, signed by src/webhooks/signature.js.
 * 6. README.md's tables of input rules (between <!-- rules:… --> markers).
 * CI (.ci/run) runs this and fails when gen/ differs from what is committed.
 */

/** Module path of gen/go; Go code imports messaging-service/gen/go/messaging/v1. */
const GO_MODULE = "messaging-service/gen/go";

/**
 * gen/go/go.mod before `go mod tidy` adds the indirect requirements: the
 * lowest versions the generated code works with (protoc-gen-go-grpc 1.6 needs
 * grpc 1.64 or later), pinned so that generation is repeatable.
 */
const GO_MOD = `module ${GO_MODULE}

go 1.23

require (
	google.golang.org/genproto/googleapis/api v0.0.0-20250707201910-8d1bb00bc6a7
	google.golang.org/grpc v1.75.1
	google.golang.org/protobuf v1.36.12
)
`;

async function generateTypeScript(): Promise<void> {
  await ensureProtovalidateProto();
  await mustRun("npx", ["buf", "generate"]);
}

async function generateGoAndOpenApi(): Promise<void> {
  await ensureGoTools();
  await mustRun("npx", ["buf", "generate", "--template", "src/codegen/buf.gen.clients.yaml"]);
  const goDir = path.join(projectRoot, "gen", "go");
  await writeFile(path.join(goDir, "go.mod"), GO_MOD);
  await mustRun("go", ["mod", "tidy"], { cwd: goDir, env: { ...process.env, GOFLAGS: "-mod=mod" } });
}

async function generatePython(): Promise<void> {
  const python = await ensurePythonVenv();
  const out = path.join(projectRoot, "gen", "python");
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  const tmp = await mkdtemp(path.join(os.tmpdir(), "msgsvc-gen-"));
  try {
    const image = path.join(tmp, "image.binpb");
    await mustRun("npx", ["buf", "build", "--path", "proto/messaging/v1", "--as-file-descriptor-set", "-o", image]);
    const files = (await readdir(path.join(projectRoot, "proto", "messaging", "v1")))
      .filter((f) => f.endsWith(".proto"))
      .sort()
      .map((f) => `messaging/v1/${f}`)
      .concat("buf/validate/validate.proto"); // imported by the field rules
    await mustRun(python, [
      "-m",
      "grpc_tools.protoc",
      `--descriptor_set_in=${image}`,
      `--python_out=${out}`,
      `--pyi_out=${out}`,
      `--grpc_python_out=${out}`,
      ...files,
    ]);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

async function generatePythonRestClient(): Promise<void> {
  const python = await ensurePythonVenv();
  const bin = path.dirname(python);
  await mustRun(
    python,
    [
      "-m",
      "openapi_python_client",
      "generate",
      "--path",
      path.join("gen", "openapi", "messaging.v1.openapi.json"),
      "--output-path",
      path.join("gen", "python", "messaging_rest"),
      "--meta",
      "none",
      "--config",
      path.join("src", "codegen", "openapi-python-client.yaml"),
      "--overwrite",
    ],
    // Its post hooks run the venv's ruff; no ruff cache inside gen/.
    { env: { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ""}`, RUFF_NO_CACHE: "true" } },
  );
}

/** 6. README.md's tables of input rules, from the protovalidate annotations (src/codegen/field-rules.ts). */
async function writeReadmeRules(): Promise<void> {
  // Imported here: the generated TypeScript of step 1 must exist first.
  const { readmeWithRules } = await import("./field-rules.js");
  const readme = path.join(projectRoot, "README.md");
  await writeFile(readme, readmeWithRules(await readFile(readme, "utf8")));
}

const started = Date.now();
await generateTypeScript();
await generateGoAndOpenApi();
await generatePython();
await generatePythonRestClient();
await writeSignatureVectors();
await writeReadmeRules();
console.log(`generated TypeScript, Go, Python, OpenAPI and the signature vectors in ${((Date.now() - started) / 1000).toFixed(1)} s`);
