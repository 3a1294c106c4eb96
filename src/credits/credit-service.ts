import type { ServiceImpl } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  CreditLedgerEntryKind,
  type CreditLedgerEntrySchema,
  type CreditService,
} from "../../gen/messaging/console/v1/credits_pb.js";
import { requireWorkspaceAccess } from "../console/console-access.js";
import { requireWorkspace } from "../console/workspace-service.js";
import { notFound } from "../shared/errors.js";
import type { WorkspaceStore } from "../workspaces/workspace-store.js";
import type { CreditStore, LedgerEntry } from "./credit-store.js";

const KIND: Record<LedgerEntry["kind"], CreditLedgerEntryKind> = {
  top_up: CreditLedgerEntryKind.TOP_UP,
  spend: CreditLedgerEntryKind.SPEND,
  refund: CreditLedgerEntryKind.REFUND,
};

/** The console form of a ledger entry. */
export function ledgerEntryToProto(entry: LedgerEntry): MessageInitShape<typeof CreditLedgerEntrySchema> {
  return {
    id: entry._id,
    object: "credit_ledger_entry",
    workspaceId: entry.workspace_id,
    kind: KIND[entry.kind],
    amount: BigInt(entry.amount),
    balanceAfter: entry.balance_after === null ? undefined : BigInt(entry.balance_after),
    messageId: entry.message_id ?? undefined,
    note: entry.note ?? undefined,
    createdAt: timestampFromDate(entry.created_at),
  };
}

/**
 * Handlers of messaging.console.v1.CreditService: AddCredits (1 to
 * 1,000,000,000 credits, note at most 500 characters) and the ledger, newest
 * first.
 */
export function createCreditService(deps: { credits: CreditStore; workspaces: WorkspaceStore }): Partial<ServiceImpl<typeof CreditService>> {
  const { credits, workspaces } = deps;
  return {
    async addCredits(req, context) {
      const note = req.note.trim();
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "write");
      const result = await credits.topUp(req.workspaceId, Number(req.amount), note || null);
      if (!result) throw notFound("workspace", req.workspaceId);
      return { entry: ledgerEntryToProto(result.entry), creditBalance: BigInt(result.balance) };
    },
    async getCreditLedgerEntry(req, context) {
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "read");
      const entry = await credits.getEntry(req.id, req.workspaceId);
      if (!entry) throw notFound("credit_ledger_entry", req.id);
      return { entry: ledgerEntryToProto(entry) };
    },
    async listCreditLedgerEntries(req, context) {
      await requireWorkspace(workspaces, req.workspaceId);
      requireWorkspaceAccess(context, req.workspaceId, "read");
      const page = await credits.list(req.workspaceId, req);
      return { object: "list", data: page.items.map(ledgerEntryToProto), total: page.total, nextPageToken: page.nextPageToken };
    },
  };
}
