import { LRUCache } from "lru-cache";

/** How long a process may serve a cached record that another process changed, in ms. */
export const RECORD_CACHE_TTL_MS = 1000;

/** A read-through cache of records by id (found or not). */
export interface RecordCache<T> {
  /** The record (or null), from the cache when it is younger than RECORD_CACHE_TTL_MS. */
  get(id: string): Promise<T | null>;
  /** Drops `id`: the next get reads the database (after a change made in this process). */
  forget(id: string): void;
}

/**
 * Caches look-ups on the request path (senders, templates: issue "the send
 * path at a write budget"): a change made in this process is seen at once
 * (the store calls forget), one made in another process within
 * RECORD_CACHE_TTL_MS. Concurrent misses for one id share one read.
 *
 * @param load reads one record by id; null when there is none.
 * @param max most records kept (least recently used dropped first).
 */
export function createRecordCache<T extends object>(load: (id: string) => Promise<T | null>, max = 10_000): RecordCache<T> {
  const cache = new LRUCache<string, { record: T | null }>({
    max,
    ttl: RECORD_CACHE_TTL_MS,
    fetchMethod: async (id) => ({ record: await load(id) }),
  });
  return {
    async get(id) {
      return (await cache.fetch(id))?.record ?? null;
    },
    forget(id) {
      cache.delete(id);
    },
  };
}
