import type { Collection, Document } from "mongodb";

/** MongoDB's error codes for a missing index and a missing collection. */
const INDEX_NOT_FOUND = 27;
const NAMESPACE_NOT_FOUND = 26;

/**
 * Drops the index `name` of `collection` if it exists: the way a release
 * retires an index an earlier one created (an index whose keys or options
 * change gets a new name, and the old one goes).
 *
 * @throws the driver's error for anything but a missing index (or collection).
 */
export async function dropIndexIfPresent<T extends Document>(collection: Collection<T>, name: string): Promise<void> {
  try {
    await collection.dropIndex(name);
  } catch (err) {
    const code = (err as { code?: number }).code;
    if (code !== INDEX_NOT_FOUND && code !== NAMESPACE_NOT_FOUND) throw err;
  }
}

/**
 * A start-up step for records of an earlier release that kept a value under
 * field `from`, indexed by `index`: while that index exists, moves the value
 * to field `to` (a thousand records a command, read through the index), then
 * drops the index. Once it is gone the step costs one listIndexes.
 *
 * @throws the driver's error.
 */
export async function renameIndexedField<T extends Document & { _id: unknown }>(collection: Collection<T>, from: string, to: string, index: string): Promise<void> {
  if (!(await collection.indexExists(index).catch(() => false))) return;
  for (;;) {
    const docs = await collection.find({ [from]: { $exists: true } } as never, { projection: { _id: 1, [from]: 1 }, limit: 1000 }).toArray();
    if (docs.length === 0) break;
    await collection.bulkWrite(
      docs.map((d) => ({ updateOne: { filter: { _id: d._id } as never, update: { $set: { [to]: d[from] }, $unset: { [from]: "" } } as never } })),
      { ordered: false },
    );
  }
  await dropIndexIfPresent(collection, index);
}
