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
