import type { EndpointRecord, EndpointStore } from "./endpoint-store.js";
import { decryptSecret, SecretKeyError, type EncryptedSecret } from "./signing-secret.js";

/** What the engine needs of an endpoint, with its secret decrypted. */
export interface EndpointView {
  id: string;
  workspaceId: string;
  url: string;
  events: readonly string[];
  enabled: boolean;
  /** As read (at most ENDPOINT_CACHE_MS ago). */
  consecutiveFailures: number;
  /** As read (at most ENDPOINT_CACHE_MS ago). */
  lastSuccessAt: Date | null;
  createdAt: Date;
  /** The signing secret; undefined when it does not decrypt (see secretError). */
  secret: string | undefined;
  secretError: string | undefined;
  /** The secret the last rotation replaced, and until when it verifies; undefined when none (or it does not decrypt). */
  previousSecret: { secret: string; until: Date } | undefined;
  /** Most automatic attempts per second (src/ratelimit/throttle.ts); null when unlimited. */
  rateLimit: number | null;
}

/** How long an endpoint read from the database is used before it is read again, in ms. */
export const ENDPOINT_CACHE_MS = 1000;

/**
 * Endpoints as the engine sees them, read at most once a second per
 * endpoint and per workspace: changes made in this process's console are
 * seen at once (invalidate), those made elsewhere within a second. An
 * endpoint this process disables is seen disabled at once (markDisabled).
 */
export class EndpointCache {
  private readonly byId = new Map<string, { view: EndpointView | null; at: number }>();
  private readonly byWorkspace = new Map<string, { ids: string[]; at: number }>();
  private readonly reading = new Map<string, Promise<unknown>>();

  constructor(
    private readonly endpoints: EndpointStore,
    private readonly secretKey: Buffer,
  ) {}

  /** The secret in clear, or the reason it does not decrypt (another key, or damaged data). */
  private decrypt(encrypted: EncryptedSecret, endpointId: string): { secret: string } | { error: string } {
    try {
      return { secret: decryptSecret(this.secretKey, encrypted, endpointId) };
    } catch (err) {
      if (!(err instanceof SecretKeyError)) throw err;
      return { error: err.message };
    }
  }

  private view(record: EndpointRecord): EndpointView {
    const current = this.decrypt(record.secret, record._id);
    // A previous secret that does not decrypt is left out: the current one signs on its own.
    const until = record.previous_secret_expires_at ?? null;
    const previous = record.previous_secret && until ? this.decrypt(record.previous_secret, record._id) : undefined;
    return {
      id: record._id,
      workspaceId: record.workspace_id,
      url: record.url,
      rateLimit: record.rate_limit ?? null,
      events: record.events,
      enabled: record.enabled,
      consecutiveFailures: record.consecutive_failures,
      lastSuccessAt: record.last_success_at,
      createdAt: record.created_at,
      secret: "secret" in current ? current.secret : undefined,
      secretError: "error" in current ? current.error : undefined,
      previousSecret: previous && until && "secret" in previous ? { secret: previous.secret, until } : undefined,
    };
  }

  private remember(record: EndpointRecord, now: number): EndpointView {
    const view = this.view(record);
    this.byId.set(record._id, { view, at: now });
    return view;
  }

  /**
   * The endpoint, or null when it does not exist; `maxAgeMs` 0 reads it now.
   * Callers that find it stale at once share one read.
   */
  get(id: string, maxAgeMs = ENDPOINT_CACHE_MS): Promise<EndpointView | null> {
    const cached = this.byId.get(id);
    if (cached && performance.now() - cached.at < maxAgeMs) return Promise.resolve(cached.view);
    const read = async () => {
      const now = performance.now();
      const record = await this.endpoints.get(id);
      if (record) return this.remember(record, now);
      this.byId.set(id, { view: null, at: now });
      return null;
    };
    return maxAgeMs === 0 ? read() : this.shared(`id:${id}`, read);
  }

  /** The endpoints of a workspace (enabled or not); callers that find them stale at once share one read. */
  forWorkspace(workspaceId: string): Promise<EndpointView[]> {
    const cached = this.byWorkspace.get(workspaceId);
    if (cached && performance.now() - cached.at < ENDPOINT_CACHE_MS) {
      const views = cached.ids.map((id) => this.byId.get(id)?.view);
      if (views.every((v) => v !== undefined)) return Promise.resolve(views.filter((v): v is EndpointView => v !== null));
    }
    return this.shared(`workspace:${workspaceId}`, async () => {
      const now = performance.now();
      const records = await this.endpoints.listAll(workspaceId);
      this.byWorkspace.set(workspaceId, { ids: records.map((r) => r._id), at: now });
      return records.map((r) => this.remember(r, now));
    });
  }

  /** Runs `read` unless a read under `key` is in flight, whose answer is shared. */
  private shared<T>(key: string, read: () => Promise<T>): Promise<T> {
    const inFlight = this.reading.get(key) as Promise<T> | undefined;
    if (inFlight) return inFlight;
    const reading: Promise<T> = read().finally(() => {
      if (this.reading.get(key) === reading) this.reading.delete(key);
    });
    this.reading.set(key, reading);
    return reading;
  }

  /** Forgets what is known of an endpoint and its workspace (after a console change); a read in flight is not shared. */
  invalidate(id: string, workspaceId: string): void {
    this.byId.delete(id);
    this.byWorkspace.delete(workspaceId);
    this.reading.delete(`id:${id}`);
    this.reading.delete(`workspace:${workspaceId}`);
  }

  /** Records that this process disabled the endpoint. */
  markDisabled(id: string): void {
    const cached = this.byId.get(id);
    if (cached?.view) cached.view = { ...cached.view, enabled: false };
  }
}
