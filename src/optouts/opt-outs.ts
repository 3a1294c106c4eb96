import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ContactEventDataSchema } from "../../gen/messaging/v1/events_pb.js";
import { OptOutSource as OptOutSourceEnum, OptOutStatus } from "../../gen/messaging/v1/opt_outs_pb.js";
import type { AuditLog } from "../console/audit/audit-log.js";
import { toRestJson } from "../contract/rest-json.js";
import type { EventBus } from "../events/event-bus.js";
import type { Clock } from "../shared/clock.js";
import type { Logger } from "../shared/logger.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import type { ChangeOutcome, OptOutChange, OptOutRecord, OptOutStore } from "./opt-out-store.js";

/** WhatsApp's error of a marketing template whose recipient stopped marketing messages. */
export const STOPPED_MARKETING_ERROR = 131050;

/** The keywords of a workspace, upper case. */
export interface Keywords {
  optOut: readonly string[];
  optIn: readonly string[];
  /** True when they are the service's defaults (OPT_OUT_KEYWORDS, OPT_IN_KEYWORDS). */
  defaults: boolean;
}

/** What a reply said, to the opt-out list (OptOuts.reply). */
export interface ReplySeen {
  workspaceId: string;
  /** Who wrote, digits with country code. */
  from: string;
  /** The reply's text (a text message's, or a button's). */
  text: string;
  /** The inbound message (msg_<uuid>). */
  messageId: string;
  at: Date;
}

/** A failure the network reported for an outbound message (OptOuts.networkFailure). */
export interface FailureSeen {
  workspaceId: string;
  /** The recipient. */
  to: string;
  errorCode: number;
  /** The template's category, fixed at acceptance ("utility" for messages accepted before categories). */
  templateCategory: string;
  messageId: string;
  at: Date;
}

/**
 * A workspace's opt-out list at work (README "Sending messages", "The
 * opt-out list"): replies with a keyword and WhatsApp's 131050 on a marketing
 * template change it, and the console does; each change fires
 * contact.opted_out or contact.opted_in, and a change the service makes
 * itself is written to the audit log with its source (the console's own are
 * audited by the console). Sends consult the store (OptOutStore.isListed).
 */
export interface OptOuts {
  readonly store: OptOutStore;
  /** The workspace's keywords: its own, else the defaults. */
  keywordsOf(workspaceId: string): Promise<Keywords>;
  /**
   * A reply whose whole text, trimmed, is one of the workspace's keywords
   * (any case) puts its writer on the list or takes it off. Idempotent: the
   * same reply seen again (its report applied anew) completes its change's
   * event and audit entry, never makes a second. Resolves to the outcome,
   * or null when the text is no keyword.
   */
  reply(seen: ReplySeen): Promise<ChangeOutcome | null>;
  /** 131050 on a marketing template puts the recipient on the list (idempotent, as reply); null when it does not apply. */
  networkFailure(seen: FailureSeen): Promise<ChangeOutcome | null>;
  /** The console puts a number on the list (contact.opted_out when it was not). */
  addFromConsole(workspaceId: string, phoneNumber: string, changedBy: string, changeId: string): Promise<ChangeOutcome>;
  /** The console takes a number off the list (contact.opted_in when it was on it). */
  removeFromConsole(workspaceId: string, phoneNumber: string, changedBy: string, changeId: string): Promise<ChangeOutcome>;
}

/** Creates the opt-out list's behaviour over its store. */
export function createOptOuts(deps: {
  store: OptOutStore;
  workspaces: Pick<WorkspaceStore, "get">;
  events: Pick<EventBus, "publish">;
  audit: Pick<AuditLog, "recordServiceChange">;
  /** OPT_OUT_KEYWORDS and OPT_IN_KEYWORDS, upper case. */
  defaults: { optOut: readonly string[]; optIn: readonly string[] };
  clock: Clock;
  logger: Logger;
}): OptOuts {
  const { store, events, audit } = deps;

  async function keywordsOf(workspaceId: string): Promise<Keywords> {
    const workspace = await deps.workspaces.get(workspaceId);
    const own = workspace?.opt_out_keywords !== undefined || workspace?.opt_in_keywords !== undefined;
    return {
      optOut: workspace?.opt_out_keywords ?? deps.defaults.optOut,
      optIn: workspace?.opt_in_keywords ?? deps.defaults.optIn,
      defaults: !own,
    };
  }

  /** Fires the change's event (its id derived from the change: fired again, it is the same event) and, for the service's own changes, its audit entry. */
  async function follow(outcome: ChangeOutcome): Promise<ChangeOutcome> {
    if (outcome.kind === "unchanged") return outcome;
    const r = outcome.record;
    const type = r.status === "opted_out" ? "contact.opted_out" : "contact.opted_in";
    const data = create(ContactEventDataSchema, {
      phoneNumber: r.phone_number,
      status: r.status === "opted_out" ? OptOutStatus.OPTED_OUT : OptOutStatus.OPTED_IN,
      source: sourceToProto(r.source),
      keyword: r.keyword ?? undefined,
      errorCode: r.error_code ?? undefined,
      messageId: r.message_id ?? undefined,
      occurredAt: timestampFromDate(r.updated_at),
    });
    const json = toRestJson(ContactEventDataSchema, data);
    if (r.source !== "console") {
      await audit.recordServiceChange({ id: r.change_id, at: r.updated_at, operation: type, workspaceId: r.workspace_id, source: r.source, request: json });
    }
    await events.publish({ workspaceId: r.workspace_id, type, data: json, dedupeKey: `opt_out:${r.change_id}`, dedupeAt: r.updated_at });
    deps.logger.info({ workspaceId: r.workspace_id, type, source: r.source, changeId: r.change_id }, "opt-out list changed");
    return outcome;
  }

  return {
    store,
    keywordsOf,
    async reply(seen) {
      const said = seen.text.trim();
      if (said === "" || said.length > 30) return null;
      const upper = said.toUpperCase();
      const keywords = await keywordsOf(seen.workspaceId);
      const out = keywords.optOut.includes(upper);
      if (!out && !keywords.optIn.includes(upper)) return null;
      const change: OptOutChange = {
        workspaceId: seen.workspaceId,
        phoneNumber: seen.from,
        source: "reply",
        keyword: said,
        messageId: seen.messageId,
        changeId: `${seen.messageId}:${out ? "opted_out" : "opted_in"}`,
        at: seen.at,
      };
      return follow(await (out ? store.optOut(change) : store.optIn(change)));
    },
    async networkFailure(seen) {
      if (seen.errorCode !== STOPPED_MARKETING_ERROR || seen.templateCategory !== "marketing") return null;
      return follow(
        await store.optOut({
          workspaceId: seen.workspaceId,
          phoneNumber: seen.to,
          source: "network_error",
          errorCode: seen.errorCode,
          messageId: seen.messageId,
          changeId: `${seen.messageId}:opted_out`,
          at: seen.at,
        }),
      );
    },
    async addFromConsole(workspaceId, phoneNumber, changedBy, changeId) {
      return follow(await store.optOut({ workspaceId, phoneNumber, source: "console", changedBy, changeId, at: deps.clock.now() }));
    },
    async removeFromConsole(workspaceId, phoneNumber, changedBy, changeId) {
      return follow(await store.optIn({ workspaceId, phoneNumber, source: "console", changedBy, changeId, at: deps.clock.now() }));
    },
  };
}

/** The proto enum of a stored source. */
export function sourceToProto(source: OptOutRecord["source"]): OptOutSourceEnum {
  return source === "reply" ? OptOutSourceEnum.REPLY : source === "network_error" ? OptOutSourceEnum.NETWORK_ERROR : OptOutSourceEnum.CONSOLE;
}
