import type { Collection, Db } from "mongodb";
import type { Clock } from "../shared/clock.js";
import { GroupCommit } from "../store/group-commit.js";
import { isDuplicateKeyError } from "../shared/errors.js";
import { newId } from "../shared/ids.js";
import { listPage, type Page, type PageRequest } from "../store/pagination.js";

/** One change of a workspace's balance, as stored in `credit_ledger`. */
export interface LedgerEntry {
  /** "top_up:<uuid>", "spend:<message id>" or "refund:<message id>": unique, so an entry is written once. */
  _id: string;
  workspace_id: string;
  kind: "top_up" | "spend" | "refund";
  /** Signed change in credits. */
  amount: number;
  /** Balance right after the change; null when the recovery sweep completed the entry. */
  balance_after: number | null;
  message_id: string | null;
  note: string | null;
  created_at: Date;
}

/**
 * A balance change applied to the workspace but not yet in the ledger, kept
 * in the workspace document under `credit_ops.<entry id>` by the same atomic
 * update that changes the balance. It makes every change exactly-once
 * without transactions: the update's filter requires the operation to be
 * absent, and the operation is removed only after its ledger entry exists.
 */
export interface PendingOperation {
  kind: LedgerEntry["kind"];
  amount: number;
  message_id: string | null;
  note: string | null;
  at: Date;
}

/** A spend to reserve (CreditStore.reserve): its pending operation, `amount` negative. */
interface SpendRequest {
  workspaceId: string;
  opId: string;
  op: PendingOperation;
}

interface WorkspaceCredits {
  _id: string;
  credit_balance: number;
  credit_ops?: Record<string, PendingOperation>;
}

/** Credits reserved for one message (CreditStore.reserve). */
export interface Reservation {
  /** The workspace's balance right after the reservation. */
  readonly balanceAfter: number;
  /**
   * Once the message is stored: writes the spend's ledger entry, batched
   * with other settlements (one insertMany per batch); resolves once it is
   * written. The pending operation is then cleared by the workspace's next
   * update of its balance, or within a second (SettledOperations).
   * Idempotent; a crash before it completes is completed by recover().
   */
  settle(): Promise<void>;
}

/** Balances and the credit ledger (README "Design" §5: single-document atomic updates only). */
export interface CreditStore {
  /** A ledger entry by id (and, when given, of `workspaceId`), or null. */
  getEntry(id: string, workspaceId?: string): Promise<LedgerEntry | null>;
  /**
   * Reserves `amount` credits for message `messageId` with one conditional
   * update of the balance (it never goes below 0), which records the spend
   * as pending in the workspace; spends of a workspace asked for while one is
   * written share the next update, one at a time only when the balance cannot
   * pay for all. Resolves to the reservation, or null when the balance is
   * too low (nothing changed). Follow with settle() once the message is
   * stored, or releaseSpend if it could not be.
   */
  reserve(workspaceId: string, messageId: string, amount: number): Promise<Reservation | null>;
  /**
   * Reserves credits for many messages of one workspace at once (a batch
   * send), `amount` each, in their order: with one conditional update of
   * the balance for all of them where it pays for all (each spend recorded as
   * pending, as reserve does); else the first as many as it pays for, the
   * count read from the balance and its update conditional on it (a few
   * rounds when other spends change the balance meanwhile, then one by one).
   * A spend pending already for a message (an earlier attempt of the same
   * batch) is that reservation. Resolves to one reservation per message, or
   * null for those the balance cannot pay for: they always come after every
   * reserved one. Exact under concurrency: each refusal is a conditional
   * update that found the balance too low.
   */
  reserveMany(workspaceId: string, messageIds: readonly string[], amount: number): Promise<(Reservation | null)[]>;
  /** Gives back a reservation whose message was never stored. Idempotent. */
  releaseSpend(workspaceId: string, messageId: string): Promise<void>;
  /**
   * Refunds the credits of message `messageId` exactly once, however often
   * it is called (crash recovery calls it again): the balance goes up, a
   * refund entry is written, then `markDone` runs (the caller records the
   * refund on the message), then the pending operation is cleared.
   */
  refund(workspaceId: string, messageId: string, amount: number, markDone: () => Promise<void>): Promise<void>;
  /**
   * The opening balance of a new workspace, `amount` credits: `fields` go
   * into the workspace's insert (the balance and its top-up pending in it,
   * written at once), then `settle` writes the top-up's ledger entry (note
   * "opening balance"; a crash before it: recover() writes it). Nothing is
   * pending for 0 credits.
   */
  opening(amount: number): { fields: { credit_balance: number; credit_ops?: Record<string, PendingOperation> }; settle(workspaceId: string): Promise<void> };
  /** Adds credits and records a top-up; resolves to the entry and the balance after. */
  topUp(workspaceId: string, amount: number, note: string | null): Promise<{ entry: LedgerEntry; balance: number } | null>;
  /** A workspace's ledger, newest first. */
  list(workspaceId: string, page: PageRequest): Promise<Page<LedgerEntry>>;
  /** Waits for settlements in flight (graceful shutdown); what fails is completed by recover() later. */
  close(): Promise<void>;
  /**
   * Completes operations pending for longer than `olderThanMs` (a process
   * stopped between balance and ledger): top-ups get their entry; a spend
   * whose message exists (`messageExists`) gets its entry, one whose message
   * was never stored is given back. A refund whose message records it done
   * (`refundDone`: the process stopped between markDone and the clear) gets
   * its entry if missing and is cleared; any other refund is left to the
   * caller's recovery, which calls refund again (clearing it here would let
   * that call pay it twice).
   */
  recover(olderThanMs: number, messageExists: (messageId: string) => Promise<boolean>, refundDone: (messageId: string) => Promise<boolean>): Promise<number>;
  ensureIndexes(): Promise<void>;
}

/** How long a settled operation waits for its workspace's next update of the balance to clear it, in ms. */
const CLEAR_LINGER_MS = 1000;

/**
 * Pending operations whose ledger entries are written, by workspace, waiting
 * to be removed from the workspace document. The workspace's next update of
 * its balance (a debit, refund or top-up: apply()) removes them with its
 * `$unset`; within `lingerMs` of the first one waiting, whatever still waits
 * is removed by one bulkWrite. So a steady stream of sends costs about one
 * command a second for its clears, and a lone send one more, later. A crash
 * before the clear leaves the operation pending: recover() finds its ledger
 * entry written (the entry's id is unique) and removes it.
 */
class SettledOperations {
  /** Workspace id → the `$unset` of its operations waiting. */
  private readonly waiting = new Map<string, Record<string, "">>();
  private timer: NodeJS.Timeout | undefined;
  /** The bulkWrite in flight, if any (close() waits for it). */
  private flushing: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly workspaces: Collection<WorkspaceCredits>,
    private readonly lingerMs: number,
  ) {}

  /** Adds operation `opId` of the workspace, written to the ledger. */
  add(workspaceId: string, opId: string): void {
    this.putBack(workspaceId, { [`credit_ops.${opId}`]: "" });
  }

  /**
   * Takes the workspace's waiting operations for an update that also sets
   * the operations `setting` (none taken when one of them is waiting: an
   * update cannot set and unset one path). Give them back with putBack
   * unless the update changed the workspace.
   */
  take(workspaceId: string, setting: Record<string, unknown>): Record<string, ""> | undefined {
    const unset = this.waiting.get(workspaceId);
    if (!unset || Object.keys(setting).some((opId) => `credit_ops.${opId}` in unset)) return undefined;
    this.waiting.delete(workspaceId);
    return unset;
  }

  /** Operations taken that are still in the workspace wait again. */
  putBack(workspaceId: string, unset: Record<string, "">): void {
    const earlier = this.waiting.get(workspaceId);
    this.waiting.set(workspaceId, earlier ? Object.assign(earlier, unset) : unset);
    if (this.closed) return; // recover() removes what is left
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.flush().catch(() => undefined); // they wait again (flush puts them back)
    }, this.lingerMs).unref();
  }

  /** Removes every waiting operation now: one bulkWrite; on an error they wait again. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.waiting.size === 0) return;
    const all = [...this.waiting];
    this.waiting.clear();
    const write = this.workspaces.bulkWrite(
      all.map(([workspaceId, unset]) => ({ updateOne: { filter: { _id: workspaceId }, update: { $unset: unset } } })),
      { ordered: false },
    );
    this.flushing = write.then(
      () => undefined,
      () => undefined,
    );
    try {
      await write;
    } catch (err) {
      for (const [workspaceId, unset] of all) this.putBack(workspaceId, unset);
      throw err;
    }
  }

  /** Graceful shutdown: waits for a bulkWrite in flight, writes what waits once, and arms no timer after it. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flushing;
    await this.flush();
  }
}

/** Creates the credit store over `db` (the `workspaces` balance and the `credit_ledger` collection). */
export function createCreditStore(db: Db, clock: Clock): CreditStore {
  const workspaces = db.collection<WorkspaceCredits>("workspaces");
  const ledger = db.collection<LedgerEntry>("credit_ledger");

  /**
   * Applies the operations `ops` (by id) to the balance with one conditional
   * update, unless one of them is pending already: their amounts summed, each
   * recorded as pending; `guard` is added to the filter. The operations
   * settled since the workspace's last update are cleared by the same update;
   * when it changes nothing (refused, or an error), they stay waiting.
   * Resolves to the balance after it, or null when refused. Only the balance
   * is read back: the workspace's pending operations stay on the server.
   */
  async function apply(workspaceId: string, ops: Record<string, PendingOperation>, guard: object = {}): Promise<Pick<WorkspaceCredits, "credit_balance"> | null> {
    const filter: Record<string, unknown> = { _id: workspaceId, ...guard };
    const set: Record<string, PendingOperation> = {};
    let sum = 0;
    for (const [opId, op] of Object.entries(ops)) {
      filter[`credit_ops.${opId}`] = { $exists: false };
      set[`credit_ops.${opId}`] = op;
      sum += op.amount;
    }
    const clears = settled.take(workspaceId, ops);
    const update = clears ? { $inc: { credit_balance: sum }, $set: set, $unset: clears } : { $inc: { credit_balance: sum }, $set: set };
    let after: Pick<WorkspaceCredits, "credit_balance"> | null = null;
    try {
      after = await workspaces.findOneAndUpdate(filter, update, { returnDocument: "after", projection: { _id: 0, credit_balance: 1 } });
      return after;
    } finally {
      if (!after && clears) settled.putBack(workspaceId, clears);
    }
  }

  async function writeEntry(entry: LedgerEntry): Promise<void> {
    try {
      await ledger.insertOne(entry);
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
  }

  const clear = (workspaceId: string, opId: string) =>
    workspaces.updateOne({ _id: workspaceId }, { $unset: { [`credit_ops.${opId}`]: "" } });

  const entryOf = (workspaceId: string, opId: string, op: PendingOperation, balanceAfter: number | null): LedgerEntry => ({
    _id: opId,
    workspace_id: workspaceId,
    kind: op.kind,
    amount: op.amount,
    balance_after: balanceAfter,
    message_id: op.message_id,
    note: op.note,
    created_at: op.at,
  });

  const settled = new SettledOperations(workspaces, CLEAR_LINGER_MS);

  /** Settlements written together: their entries in one insertMany; their clears then wait in `settled`. */
  const settlements = new GroupCommit<{ workspaceId: string; opId: string; entry: LedgerEntry }, void>(async (items) => {
    try {
      await ledger.insertMany(
        items.map((i) => i.entry),
        { ordered: false },
      );
    } catch (err) {
      // Entries written by an earlier attempt are duplicates; anything else is a failure.
      const errors = (err as { writeErrors?: { code: number }[] | { code: number } }).writeErrors;
      if (!errors || ([] as { code: number }[]).concat(errors).some((e) => e.code !== 11000)) throw err;
    }
    for (const { workspaceId, opId } of items) settled.add(workspaceId, opId);
    return items.map(() => undefined);
  }, 500);
  /** Settlements not yet written (close() waits for them). */
  const unsettled = new Set<Promise<void>>();

  const reservation = (workspaceId: string, opId: string, op: PendingOperation, balanceAfter: number): Reservation => ({
    balanceAfter,
    settle() {
      const done = settlements.add({ workspaceId, opId, entry: entryOf(workspaceId, opId, op, balanceAfter) });
      unsettled.add(done);
      return done.finally(() => unsettled.delete(done));
    },
  });

  /** A new top-up of `amount` credits: its operation id and pending operation. */
  const newTopUp = (amount: number, note: string | null): { opId: string; op: PendingOperation } => ({
    opId: `top_up:${newId()}`,
    op: { kind: "top_up", amount, message_id: null, note, at: clock.now() },
  });

  /** Reserves one spend alone: the conditional update, or the reservation an earlier attempt of the same message made. */
  async function reserveAlone({ workspaceId, opId, op }: SpendRequest): Promise<Reservation | null> {
    const after = await apply(workspaceId, { [opId]: op }, { credit_balance: { $gte: -op.amount } });
    if (after) return reservation(workspaceId, opId, op, after.credit_balance);
    // Reserved already by an earlier attempt of the same message (an idempotent retry after a crash)?
    const doc = await workspaces.findOne({ _id: workspaceId }, { projection: { credit_balance: 1, [`credit_ops.${opId}`]: 1 } });
    const earlier = doc?.credit_ops?.[opId];
    return earlier ? reservation(workspaceId, opId, earlier, doc.credit_balance) : null;
  }

  /**
   * Reserves the spends of one workspace that arrived together with one
   * conditional update of its balance for their sum, each recorded as
   * pending, as if applied one after the other in order (each gets the
   * balance right after it). When the balance cannot pay for all of them, or
   * one is pending already, each is reserved alone: exactly those the balance
   * pays for are accepted.
   */
  async function reserveTogether(workspaceId: string, requests: SpendRequest[]): Promise<(Reservation | null)[]> {
    const opIds = new Set(requests.map((r) => r.opId));
    if (requests.length > 1 && opIds.size === requests.length) {
      const total = requests.reduce((sum, r) => sum - r.op.amount, 0);
      const after = await apply(workspaceId, Object.fromEntries(requests.map((r) => [r.opId, r.op])), { credit_balance: { $gte: total } });
      if (after) {
        let balance = after.credit_balance + total;
        return requests.map(({ opId, op }) => reservation(workspaceId, opId, op, (balance += op.amount)));
      }
    }
    return Promise.all(requests.map(reserveAlone));
  }

  /** Spends requested while a reservation is being written go into the next one: one update per workspace per batch. */
  const spends = new GroupCommit<SpendRequest, Reservation | null>(async (requests) => {
    const byWorkspace = new Map<string, number[]>();
    requests.forEach((r, i) => {
      const indexes = byWorkspace.get(r.workspaceId);
      if (indexes) indexes.push(i);
      else byWorkspace.set(r.workspaceId, [i]);
    });
    const results: (Reservation | null)[] = [];
    await Promise.all(
      [...byWorkspace].map(async ([workspaceId, indexes]) => {
        const reserved = await reserveTogether(workspaceId, indexes.map((i) => requests[i] as SpendRequest));
        indexes.forEach((i, k) => (results[i] = reserved[k] ?? null));
      }),
    );
    return results;
  }, 100);

  /** Rounds of reserveMany that read the balance and try the count it pays for, before spends are reserved one by one. */
  const RESERVE_MANY_ROUNDS = 4;

  async function reserveMany(workspaceId: string, messageIds: readonly string[], amount: number): Promise<(Reservation | null)[]> {
    const at = clock.now();
    const requests: SpendRequest[] = messageIds.map((messageId) => ({
      workspaceId,
      opId: `spend:${messageId}`,
      op: { kind: "spend", amount: -amount, message_id: messageId, note: null, at },
    }));
    const results: (Reservation | null)[] = requests.map(() => null);
    /** Reserves requests [from, to) with one update of their sum; true when it was made. */
    const together = async (from: number, to: number): Promise<boolean> => {
      const group = requests.slice(from, to);
      const total = group.length * amount;
      const after = await apply(workspaceId, Object.fromEntries(group.map((r) => [r.opId, r.op])), { credit_balance: { $gte: total } });
      if (!after) return false;
      let balance = after.credit_balance + total;
      group.forEach(({ opId, op }, k) => (results[from + k] = reservation(workspaceId, opId, op, (balance += op.amount))));
      return true;
    };
    let next = 0;
    if (requests.length === 0 || (await together(0, requests.length))) return results;
    for (let round = 0; round < RESERVE_MANY_ROUNDS && next < requests.length; round++) {
      const doc = await workspaces.findOne({ _id: workspaceId }, { projection: { credit_balance: 1, credit_ops: 1 } });
      if (!doc) return results;
      // Spends an earlier attempt of the same batch reserved (their messages were not answered) are theirs already.
      const pending = doc.credit_ops ?? {};
      while (next < requests.length && pending[requests[next]!.opId]) {
        const { opId } = requests[next]!;
        results[next] = reservation(workspaceId, opId, pending[opId]!, doc.credit_balance);
        next++;
      }
      if (requests.slice(next).some((r) => pending[r.opId])) break; // interleaved: one by one below
      const payable = amount > 0 ? Math.min(requests.length - next, Math.floor(doc.credit_balance / amount)) : requests.length - next;
      if (payable <= 0) return results;
      // Those after them are more than the balance read pays for: refused.
      if (await together(next, next + payable)) return results;
    }
    // Contended: one by one, each a conditional update; the first the balance cannot pay for ends the batch's spends.
    for (; next < requests.length; next++) {
      const reserved = await reserveAlone(requests[next]!);
      if (!reserved) break;
      results[next] = reserved;
    }
    return results;
  }

  async function settle(workspaceId: string, opId: string, balanceAfter: number | null): Promise<void> {
    const doc = await workspaces.findOne({ _id: workspaceId }, { projection: { [`credit_ops.${opId}`]: 1 } });
    const op = doc?.credit_ops?.[opId];
    if (!op) return;
    await writeEntry(entryOf(workspaceId, opId, op, balanceAfter));
    await clear(workspaceId, opId);
  }

  async function releaseSpend(workspaceId: string, messageId: string): Promise<void> {
    const opId = `spend:${messageId}`;
    const doc = await workspaces.findOne({ _id: workspaceId }, { projection: { [`credit_ops.${opId}`]: 1 } });
    const op = doc?.credit_ops?.[opId];
    if (!op) return;
    await workspaces.updateOne(
      { _id: workspaceId, [`credit_ops.${opId}`]: { $exists: true } },
      { $inc: { credit_balance: -op.amount }, $unset: { [`credit_ops.${opId}`]: "" } },
    );
  }

  return {
    getEntry: (id, workspaceId) => ledger.findOne({ _id: id, ...(workspaceId ? { workspace_id: workspaceId } : {}) }),
    reserve(workspaceId, messageId, amount) {
      const opId = `spend:${messageId}`;
      return spends.add({ workspaceId, opId, op: { kind: "spend", amount: -amount, message_id: messageId, note: null, at: clock.now() } });
    },
    reserveMany,
    releaseSpend,
    async refund(workspaceId, messageId, amount, markDone) {
      const opId = `refund:${messageId}`;
      const op: PendingOperation = { kind: "refund", amount, message_id: messageId, note: null, at: clock.now() };
      const after = amount > 0 ? await apply(workspaceId, { [opId]: op }) : null;
      if (after) {
        await writeEntry(entryOf(workspaceId, opId, op, after.credit_balance));
      } else if (amount > 0) {
        // Already applied by an earlier call that stopped half-way: complete its entry.
        const doc = await workspaces.findOne({ _id: workspaceId }, { projection: { [`credit_ops.${opId}`]: 1 } });
        const pending = doc?.credit_ops?.[opId];
        if (pending) await writeEntry(entryOf(workspaceId, opId, pending, null));
      }
      await markDone();
      await clear(workspaceId, opId);
    },
    opening(amount) {
      if (amount <= 0) return { fields: { credit_balance: amount }, settle: async () => {} };
      const { opId, op } = newTopUp(amount, "opening balance");
      return { fields: { credit_balance: amount, credit_ops: { [opId]: op } }, settle: (workspaceId) => settle(workspaceId, opId, amount) };
    },
    async topUp(workspaceId, amount, note) {
      const { opId, op } = newTopUp(amount, note);
      const after = await apply(workspaceId, { [opId]: op });
      if (!after) return null;
      const entry = entryOf(workspaceId, opId, op, after.credit_balance);
      await writeEntry(entry);
      await clear(workspaceId, opId);
      return { entry, balance: after.credit_balance };
    },
    list: (workspaceId, page) => listPage(ledger, { workspace_id: workspaceId }, page),
    async recover(olderThanMs, messageExists, refundDone) {
      const cutoff = clock.now().getTime() - olderThanMs;
      let completed = 0;
      const pending = workspaces.find({ credit_ops: { $gt: {} } }, { projection: { credit_ops: 1 } });
      for await (const doc of pending) {
        for (const [opId, op] of Object.entries(doc.credit_ops ?? {})) {
          if (op.at.getTime() > cutoff) continue;
          if (op.kind === "refund" && !(op.message_id && (await refundDone(op.message_id)))) continue;
          if (op.kind === "spend" && op.message_id && !(await messageExists(op.message_id))) {
            await releaseSpend(doc._id, op.message_id);
          } else {
            await settle(doc._id, opId, null);
          }
          completed++;
        }
      }
      return completed;
    },
    async ensureIndexes() {
      await ledger.createIndex({ workspace_id: 1, created_at: -1, _id: -1 });
    },
    async close() {
      await Promise.allSettled([...unsettled]);
      await settled.close().catch(() => undefined); // else recover() clears them
    },
  };
}
