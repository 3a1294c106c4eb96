import type { Collection, Document, OptionalUnlessRequiredId } from "mongodb";
import { GroupCommit } from "./group-commit.js";

/** What became of one document of a batched insert. */
export type InsertOutcome = "inserted" | "duplicate" | Error;

/** A write error as the driver reports it for one document of an insertMany. */
interface WriteErrorLike {
  index: number;
  code: number;
  errmsg?: string;
}

/**
 * Inserts `docs` with one unordered insertMany (one command, however many
 * documents) and answers each document's fate, in order: inserted, a
 * duplicate key (E11000: stored already), or the server's error for it.
 *
 * @throws what failed the whole command (no connection, server down): then no
 *   document's fate is known, and some may be stored.
 */
export async function insertEach<T extends Document>(collection: Collection<T>, docs: OptionalUnlessRequiredId<T>[]): Promise<InsertOutcome[]> {
  try {
    await collection.insertMany(docs, { ordered: false });
    return docs.map(() => "inserted");
  } catch (err) {
    const reported = (err as { writeErrors?: WriteErrorLike | WriteErrorLike[] }).writeErrors;
    if (reported === undefined) throw err;
    const failed = new Map(([] as WriteErrorLike[]).concat(reported).map((e) => [e.index, e]));
    return docs.map((_, i) => {
      const e = failed.get(i);
      return !e ? "inserted" : e.code === 11000 ? "duplicate" : new Error(e.errmsg ?? `insert failed (code ${e.code})`);
    });
  }
}

/**
 * Inserts by group commit: documents added while a write runs share the
 * next insertEach (at most `maxBatch` a command); each caller awaits its
 * own document's outcome.
 */
export function groupInserts<T extends Document>(collection: Collection<T>, maxBatch = 500): GroupCommit<OptionalUnlessRequiredId<T>, InsertOutcome> {
  return new GroupCommit((docs) => insertEach(collection, docs), maxBatch);
}
