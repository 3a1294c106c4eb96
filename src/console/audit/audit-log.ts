import type { Collection, Db, Filter } from "mongodb";
import { ConnectError, type Interceptor, type ServiceImpl } from "@connectrpc/connect";
import type { JsonObject, JsonValue, MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { AuditEntrySchema, AuditLogService } from "../../../gen/messaging/console/v1/audit_log_pb.js";
import { toRestJson } from "../../contract/rest-json.js";
import { requestStateKey } from "../../gateway/request-state.js";
import { describeError, isDuplicateKeyError, notFound } from "../../shared/errors.js";
import type { Logger } from "../../shared/logger.js";
import { listPage } from "../../store/pagination.js";
import { actsAsOperator, consoleActorKey, consoleActorOf, mayRead, requireWorkspaceAccess } from "../console-access.js";

/** One console change as stored in `audit_log`. */
export interface AuditRecord {
  /** The console request id. */
  _id: string;
  at: Date;
  /** "operator" or the console user's email (for a sign-in, the email given). */
  actor: string;
  actor_user_id: string | null;
  operation: string;
  workspace_id: string | null;
  /** The request as REST JSON, passwords, secrets and tokens redacted. */
  request: JsonObject;
  /** "ok" or the error code answered. */
  outcome: string;
  /**
   * Where the change came from: "console" (absent in entries written before
   * it was recorded), or for an opt-out change the service made itself,
   * "reply" or "network_error".
   */
  source?: "console" | "reply" | "network_error";
}

/** A change the service made itself, for the audit log (AuditLog.recordServiceChange). */
export interface ServiceChange {
  /** Names the change; the same change recorded twice is one entry. */
  id: string;
  at: Date;
  /** What it did, for example "contact.opted_out". */
  operation: string;
  workspaceId: string;
  /** What caused it. */
  source: "reply" | "network_error";
  /** Its facts (REST JSON). */
  request: JsonObject;
}

const SENSITIVE = /password|secret|token/i;

/** Copy of `value` with every field whose name mentions a password, secret or token replaced by "[redacted]". */
export function redact(value: JsonValue): JsonValue {
  if (Array.isArray(value)) return value.map(redact);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, SENSITIVE.test(k) && v !== null && v !== "" ? "[redacted]" : redact(v)]),
  );
}

/** True for methods that only read (Get…, List…): they are not audited. */
const isRead = (name: string) => name.startsWith("Get") || name.startsWith("List");

/** The audit log: written by the console's interceptor, read through AuditLogService. */
export interface AuditLog {
  readonly collection: Collection<AuditRecord>;
  /**
   * Records every console change, whichever protocol carried it: each call
   * of a method that is not Get…/List… by an identified caller (and every
   * sign-in attempt), with who, what (operation, workspace, redacted
   * request), when and the outcome, refused calls included. Runs inside
   * the outcome interceptor so it sees the final error code.
   */
  readonly interceptor: Interceptor;
  readonly service: Partial<ServiceImpl<typeof AuditLogService>>;
  /**
   * Records a change the service made itself (an opt-out by a reply or a
   * network error), actor "service", outcome "ok". Idempotent: a change
   * recorded again (applied anew after a crash) stays one entry.
   *
   * @throws the database's error (the caller's step is retried).
   */
  recordServiceChange(change: ServiceChange): Promise<void>;
  ensureIndexes(): Promise<void>;
}

/** Creates the audit log over `db`. */
export function createAuditLog(db: Db, logger: Logger): AuditLog {
  const collection = db.collection<AuditRecord>("audit_log");

  const interceptor: Interceptor = (next) => async (req) => {
    const state = req.contextValues.get(requestStateKey);
    if (isRead(req.method.name) || !state) return next(req);
    let outcome = "ok";
    try {
      return await next(req);
    } catch (err) {
      outcome = err instanceof ConnectError ? describeError(err).code : "internal";
      throw err;
    } finally {
      const actor = req.contextValues.get(consoleActorKey);
      const request = req.stream ? {} : toRestJson(req.method.input, req.message);
      const loginEmail = req.method.name === "Login" ? String(request.email ?? "") : undefined;
      if (actor || loginEmail !== undefined) {
        const record: AuditRecord = {
          _id: state.requestId,
          at: state.receivedAt,
          actor: actor?.kind === "user" ? actor.email : actor ? "operator" : (loginEmail as string),
          actor_user_id: actor?.kind === "user" ? actor.userId : null,
          operation: `${req.service.typeName}/${req.method.name}`,
          workspace_id: state.workspaceId ?? (typeof request.workspace_id === "string" && request.workspace_id !== "" ? request.workspace_id : null),
          request: redact(request) as JsonObject,
          outcome,
          source: "console",
        };
        await collection.insertOne(record).catch((err: unknown) => logger.error({ err, requestId: state.requestId }, "audit write failed"));
      }
    }
  };

  const auditEntryToProto = (r: AuditRecord): MessageInitShape<typeof AuditEntrySchema> => ({
    id: r._id,
    object: "audit_entry",
    at: timestampFromDate(r.at),
    actor: r.actor,
    actorUserId: r.actor_user_id ?? undefined,
    operation: r.operation,
    workspaceId: r.workspace_id ?? undefined,
    request: r.request,
    outcome: r.outcome,
    source: r.source ?? "console",
  });

  const service: Partial<ServiceImpl<typeof AuditLogService>> = {
    async getAuditEntry(req, context) {
      const record = await collection.findOne({ _id: req.id });
      // Visible as in the list: to the operator, and to users with a role in the entry's workspace.
      if (!record || !mayRead(consoleActorOf(context), record.workspace_id)) throw notFound("audit_entry", req.id);
      return { auditEntry: auditEntryToProto(record) };
    },
    async listAuditEntries(req, context) {
      const actor = consoleActorOf(context);
      let filter: Filter<AuditRecord> = {};
      if (req.workspaceId !== "") {
        requireWorkspaceAccess(context, req.workspaceId, "read");
        filter = { workspace_id: req.workspaceId };
      } else if (!actsAsOperator(actor)) {
        filter = { workspace_id: { $in: actor?.kind === "user" ? [...actor.roles.keys()] : [] } };
      }
      const page = await listPage(collection, filter, req, "at");
      return {
        object: "list",
        total: page.total,
        nextPageToken: page.nextPageToken,
        data: page.items.map(auditEntryToProto),
      };
    },
  };

  return {
    collection,
    interceptor,
    service,
    async recordServiceChange(change) {
      try {
        await collection.insertOne({
          _id: change.id,
          at: change.at,
          actor: "service",
          actor_user_id: null,
          operation: change.operation,
          workspace_id: change.workspaceId,
          request: change.request,
          outcome: "ok",
          source: change.source,
        });
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
      }
    },
    async ensureIndexes() {
      await collection.createIndex({ at: -1, _id: -1 });
      await collection.createIndex({ workspace_id: 1, at: -1 });
    },
  };
}
