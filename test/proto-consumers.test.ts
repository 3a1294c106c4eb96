import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { ensureProtovalidateProto, ensurePythonVenv, missingToolchain, mustRun, PROTOVALIDATE_PROTO_DIR } from "../src/codegen/toolchain.js";
import { projectRoot } from "../src/shared/project-root.js";
import { createSender, createTemplate, FAST_MESSAGING, msgsvc } from "./helpers/messaging.js";
import { createTestService, eventually, type TestService } from "./helpers/test-service.js";

/*
 * The contract as other toolchains load it, from the .proto sources (not from
 * gen/): every file of proto/ through @grpc/proto-loader (protobufjs, the
 * loader grpc-js documents) and through protoc as grpcio-tools runs it; then
 * every method of every public service called through a grpc-js client made
 * from the loaded definitions, against a real service. The imports resolve as
 * README "Using the contract from other toolchains" tells a consumer:
 * google/api from the google-proto-files package, buf/validate from
 * protovalidate's module.
 */

const PROTO_ROOT = path.join(projectRoot, "proto");
const INCLUDE_DIRS = [PROTO_ROOT, path.join(projectRoot, "node_modules", "google-proto-files"), PROTOVALIDATE_PROTO_DIR];
const LOADER_OPTIONS: protoLoader.Options = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true, includeDirs: INCLUDE_DIRS };

/** Every .proto of proto/, relative to it ("messaging/v1/messages.proto"). */
async function contractFiles(): Promise<string[]> {
  const entries = await readdir(PROTO_ROOT, { recursive: true });
  return entries.filter((f) => f.endsWith(".proto")).sort();
}

const pythonMissing = await missingToolchain("python3-venv");
let files: string[];

beforeAll(async () => {
  await ensureProtovalidateProto();
  files = await contractFiles();
}, 120_000);

describe("every file of proto/", () => {
  it("loads with @grpc/proto-loader, one file at a time", async () => {
    expect(files.length).toBeGreaterThan(20);
    const failures: string[] = [];
    for (const file of files) {
      await protoLoader.load(file, LOADER_OPTIONS).catch((err: Error) => failures.push(`${file}: ${err.message}`));
    }
    expect(failures).toEqual([]);
  });

  it.skipIf(pythonMissing !== undefined)(`compiles with protoc (grpcio-tools) from source, and the Python modules import${pythonMissing ? ` (skipped: ${pythonMissing})` : ""}`, async () => {
    const python = await ensurePythonVenv();
    const out = await mkdtemp(path.join(tmpdir(), "protoc-"));
    try {
      const includes = INCLUDE_DIRS.map((dir) => `-I${dir}`);
      await mustRun(python, ["-m", "grpc_tools.protoc", ...includes, `--python_out=${out}`, `--grpc_python_out=${out}`, "buf/validate/validate.proto", ...files]);
      const modules = files.map((f) => f.replace(/\.proto$/, "_pb2_grpc").replaceAll("/", "."));
      const printed = await mustRun(python, ["-c", `import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)\nprint(len(sys.argv) - 1)`, ...modules], {
        env: { ...process.env, PYTHONPATH: out },
      });
      expect(Number(printed.trim())).toBe(files.length);
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("grpc-js clients made from the loaded definitions", () => {
  const RECIPIENT = "4915123459992"; // the simulator's "delivered, never read" number (README "The network: simulator")
  let t: TestService;
  let key: string;
  let senderId: string;
  let templateId: string;
  let formTemplateId: string;
  let v1: Record<string, grpc.ServiceClientConstructor>;
  const clients: grpc.Client[] = [];
  /** RPC paths called, to check that every method of every public service was. */
  const called = new Set<string>();

  beforeAll(async () => {
    t = await createTestService({ config: { ...FAST_MESSAGING, logLevel: "error" } });
    const workspaceId = await t.createWorkspace("Proto consumers", 100);
    key = (
      await t.createKey(workspaceId, {
        scopes: ["senders:read", "templates:read", "messages:send", "messages:read", "webhooks:read", "flow_responses:read"],
      })
    ).secret;
    senderId = await createSender(t, workspaceId);
    templateId = await createTemplate(t, workspaceId);
    formTemplateId = await createTemplate(t, workspaceId, { name: "signup_form", body: "Hi {{name}}, please sign up", flowId: "1234567890" });
    const publicFiles = files.filter((f) => f.startsWith("messaging/v1/"));
    const loaded = grpc.loadPackageDefinition(await protoLoader.load(publicFiles, LOADER_OPTIONS)) as any;
    v1 = loaded.messaging.v1;
  }, 60_000);
  afterAll(async () => {
    for (const client of clients) client.close();
    await t?.close();
  });

  /** A client of public service `name` (its constructor from the loaded definitions). */
  function client(name: string): any {
    const Service = v1[name];
    if (!Service) throw new Error(`messaging.v1.${name} is not in the loaded definitions`);
    const made = new Service(`127.0.0.1:${t.service.publicPort}`, grpc.credentials.createInsecure());
    clients.push(made);
    return made;
  }

  const metadata = () => {
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${key}`);
    return md;
  };

  /** Calls unary `method` of `service`; resolves to the response or rejects with the ServiceError. */
  function unary(service: string, method: string, request: object): Promise<any> {
    called.add(`${service}/${method}`);
    const c = client(service);
    return new Promise((resolve, reject) => c[method](request, metadata(), (err: grpc.ServiceError | null, res: unknown) => (err ? reject(err) : resolve(res))));
  }

  it("AccountService.GetMe", async () => {
    const me = await unary("AccountService", "GetMe", {});
    expect(me.key.scopes).toContain("messages:send");
    expect(me.rate_limit_per_min).toBe(100);
  });

  it("SenderService.ListSenders and TemplateService.ListTemplates", async () => {
    const senders = await unary("SenderService", "ListSenders", { page_size: 10 });
    expect(senders.data.map((s: { id: string }) => s.id)).toEqual([senderId]);
    const templates = await unary("TemplateService", "ListTemplates", { page_size: 10 });
    expect(templates.data.map((s: { id: string }) => s.id).sort()).toEqual([templateId, formTemplateId].sort());
    expect(templates.data.find((s: { id: string }) => s.id === templateId).variables.map((v: { name: string }) => v.name)).toEqual(["name", "code"]);
  });

  it("MessageService.SendMessage, GetMessage and ListMessages; a refusal carries its status", async () => {
    const sent = await unary("MessageService", "SendMessage", { to: RECIPIENT, sender: senderId, template: { id: templateId, variables: { name: "Ada", code: "123456" } } });
    const id: string = sent.message.message_id;
    expect(id).toMatch(/^msg_/);
    expect(sent.message.status).toBe("MESSAGE_STATUS_ACCEPTED");
    const delivered = await eventually(async () => {
      const got = await unary("MessageService", "GetMessage", { id });
      return got.message.status === "MESSAGE_STATUS_DELIVERED" ? got.message : undefined;
    });
    expect(delivered.to).toBe(RECIPIENT);
    const list = await unary("MessageService", "ListMessages", { page_size: 10, to: RECIPIENT });
    expect(list.data.map((m: { message_id: string }) => m.message_id)).toEqual([id]);
    const refused = await unary("MessageService", "SendMessage", { to: "12", sender: senderId, template: { id: templateId, variables: {} } }).then(
      () => undefined,
      (err: grpc.ServiceError) => err,
    );
    expect(refused?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(refused?.details).toContain("to");
  });

  it("MessageService.CancelMessage: a scheduled send is canceled, a delivered one refused", async () => {
    const sendAt = { seconds: String(Math.floor(Date.now() / 1000) + 600), nanos: 0 };
    const scheduled = await unary("MessageService", "SendMessage", { to: RECIPIENT, sender: senderId, template: { id: templateId, variables: { name: "Ada", code: "1" } }, send_at: sendAt });
    expect(scheduled.message.status).toBe("MESSAGE_STATUS_SCHEDULED");
    const canceled = await unary("MessageService", "CancelMessage", { id: scheduled.message.message_id });
    expect(canceled.message.status).toBe("MESSAGE_STATUS_CANCELED");
    const refused = await unary("MessageService", "CancelMessage", { id: scheduled.message.message_id }).then(
      () => undefined,
      (err: grpc.ServiceError) => err,
    );
    expect(refused?.code).toBe(grpc.status.FAILED_PRECONDITION);
  });

  it("MessageService.BatchSendMessages and OptOutService.ListOptOuts", async () => {
    const batch = await unary("MessageService", "BatchSendMessages", {
      messages: [
        { to: RECIPIENT, sender: senderId, template: { id: templateId, variables: { name: "Ada", code: "1" } } },
        { to: "12", sender: senderId, template: { id: templateId, variables: { name: "Ada", code: "1" } } },
      ],
    });
    expect(batch.accepted_count).toBe(1);
    expect(batch.results[0].message.status).toBe("MESSAGE_STATUS_ACCEPTED");
    expect(batch.results[1].index).toBe(1);
    expect(batch.results[1].error.code).toBe("invalid_argument");
    const optOuts = await unary("OptOutService", "ListOptOuts", { page_size: 10 });
    expect(optOuts).toMatchObject({ object: "list", data: [], total: 0 });
  });

  it("WebhookService.ListWebhooks", async () => {
    const hooks = await unary("WebhookService", "ListWebhooks", {});
    expect(hooks).toMatchObject({ object: "list", data: [], total: 0 });
  });

  it("FlowResponseService.ListFlowResponses, GetFlowResponse and the GetFlowResponseFile stream", async () => {
    const sent = await unary("MessageService", "SendMessage", { to: "4915112340001", sender: senderId, template: { id: formTemplateId, variables: { name: "Ada" } } });
    const messageId: string = sent.message.message_id;
    await eventually(async () => ((await unary("MessageService", "GetMessage", { id: messageId })).message.wa_message_id ? true : undefined));
    const photo = path.join(projectRoot, "test", "fixtures", "photo.jpg");
    const cli = await msgsvc(t, ["simulate", "flow", "--message", messageId, "--response", '{"name":"Ada"}', "--file", `id_photo=${photo}`, "--json"]);
    expect(cli.code, cli.stderr).toBe(0);
    const responseId: string = JSON.parse(cli.stdout).flow_response_id;
    const stored = await eventually(async () => {
      const list = await unary("FlowResponseService", "ListFlowResponses", { message_id: messageId });
      return list.data[0]?.files[0]?.sha256 ? list.data[0] : undefined;
    });
    expect(stored.id).toBe(responseId);
    const got = await unary("FlowResponseService", "GetFlowResponse", { id: responseId });
    expect(got.flow_response.files.map((f: { file_name: string }) => f.file_name)).toEqual(["photo.jpg"]);

    called.add("FlowResponseService/GetFlowResponseFile");
    const chunks: Buffer[] = [];
    let contentType = "";
    await new Promise<void>((resolve, reject) => {
      const stream = client("FlowResponseService").GetFlowResponseFile({ id: responseId, index: 0 }, metadata());
      stream.on("data", (body: { content_type: string; data: Buffer }) => {
        contentType ||= body.content_type;
        chunks.push(body.data);
      });
      stream.on("error", reject);
      stream.on("end", resolve);
    });
    expect(contentType).toBe("image/jpeg");
    const bytes = Buffer.concat(chunks);
    expect(bytes.length).toBe(Number(got.flow_response.files[0].size_bytes)); // int64: a string with longs: String
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(got.flow_response.files[0].sha256);
    expect(bytes.equals(await readFile(photo))).toBe(true);
  }, 60_000);

  it("called every method of every public service", () => {
    const all = Object.entries(v1)
      .filter(([, value]) => typeof value === "function" && "service" in value)
      .flatMap(([name, ctor]) => Object.keys(ctor.service).map((method) => `${name}/${method}`));
    expect(all.length).toBeGreaterThanOrEqual(10);
    expect([...called].sort()).toEqual(all.sort());
  });
});
