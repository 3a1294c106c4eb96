import { createHash, randomBytes } from "node:crypto";
import type { Collection, Db } from "mongodb";
import type { Clock } from "../../shared/clock.js";
import { newId } from "../../shared/ids.js";
import { listPage, type Page, type PageRequest } from "../../store/pagination.js";

/** A console role in one workspace. */
export type Role = "admin" | "viewer";

/** A console user as stored in `console_users`. */
export interface ConsoleUserRecord {
  /** User id. Shape: UUID. */
  _id: string;
  /** Lower case; unique. */
  email: string;
  /** scrypt hash (see passwords.ts); never the password. */
  password_hash: string;
  /** True for the bootstrap admin: may do all the operator may. */
  operator: boolean;
  /** Role by workspace id (a map, so one atomic $set or $unset changes one role). */
  roles: Record<string, Role>;
  created_at: Date;
}

/** A console session as stored in `console_sessions`: keyed by the token's SHA-256, never the token. */
export interface ConsoleSessionRecord {
  _id: string;
  user_id: string;
  created_at: Date;
  expires_at: Date;
}

/** Access to console users and their sessions. */
export interface ConsoleUserStore {
  readonly users: Collection<ConsoleUserRecord>;
  readonly sessions: Collection<ConsoleSessionRecord>;
  create(input: { email: string; passwordHash: string; operator: boolean; roles: ConsoleUserRecord["roles"] }): Promise<ConsoleUserRecord>;
  get(id: string): Promise<ConsoleUserRecord | null>;
  findByEmail(email: string): Promise<ConsoleUserRecord | null>;
  list(page: PageRequest): Promise<Page<ConsoleUserRecord>>;
  /** Sets (or replaces) the user's role in a workspace; null if the user is unknown. */
  grantRole(userId: string, workspaceId: string, role: Role): Promise<ConsoleUserRecord | null>;
  /** Removes the user's role in a workspace; null if the user is unknown. */
  revokeRole(userId: string, workspaceId: string): Promise<ConsoleUserRecord | null>;
  /** Deletes the user and their sessions; false if unknown. */
  delete(id: string): Promise<boolean>;
  /** Creates or updates the bootstrap admin (operator) with this email and password hash. */
  upsertBootstrapAdmin(email: string, passwordHash: string): Promise<ConsoleUserRecord>;
  /** Opens a session for `userId`; returns the token (`cs_…`, shown once) and its expiry. */
  openSession(userId: string, ttlMs: number): Promise<{ token: string; expiresAt: Date }>;
  /** The user of a live session token, or null. */
  userOfSession(token: string): Promise<ConsoleUserRecord | null>;
  /** Ends a session. */
  closeSession(token: string): Promise<void>;
  ensureIndexes(): Promise<void>;
}

const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");

/** Creates the console user store over `db`. */
export function createConsoleUserStore(db: Db, clock: Clock): ConsoleUserStore {
  const users = db.collection<ConsoleUserRecord>("console_users");
  const sessions = db.collection<ConsoleSessionRecord>("console_sessions");
  return {
    users,
    sessions,
    async create({ email, passwordHash, operator, roles }) {
      const record: ConsoleUserRecord = {
        _id: newId(),
        email,
        password_hash: passwordHash,
        operator,
        roles,
        created_at: clock.now(),
      };
      await users.insertOne(record);
      return record;
    },
    get: (id) => users.findOne({ _id: id }),
    findByEmail: (email) => users.findOne({ email }),
    list: (page) => listPage(users, {}, page),
    grantRole: (userId, workspaceId, role) =>
      users.findOneAndUpdate({ _id: userId }, { $set: { [`roles.${workspaceId}`]: role } }, { returnDocument: "after" }),
    revokeRole: (userId, workspaceId) =>
      users.findOneAndUpdate({ _id: userId }, { $unset: { [`roles.${workspaceId}`]: "" } }, { returnDocument: "after" }),
    async delete(id) {
      const result = await users.deleteOne({ _id: id });
      await sessions.deleteMany({ user_id: id });
      return result.deletedCount === 1;
    },
    async upsertBootstrapAdmin(email, passwordHash) {
      const existing = await users.findOne({ email });
      if (!existing) {
        const record: ConsoleUserRecord = { _id: newId(), email, password_hash: passwordHash, operator: true, roles: {}, created_at: clock.now() };
        await users.insertOne(record);
        return record;
      }
      const updated = await users.findOneAndUpdate(
        { _id: existing._id },
        { $set: { password_hash: passwordHash, operator: true } },
        { returnDocument: "after" },
      );
      return updated ?? existing;
    },
    async openSession(userId, ttlMs) {
      const token = `cs_${randomBytes(32).toString("base64url")}`;
      const now = clock.now();
      const expiresAt = new Date(now.getTime() + ttlMs);
      await sessions.insertOne({ _id: hashToken(token), user_id: userId, created_at: now, expires_at: expiresAt });
      return { token, expiresAt };
    },
    async userOfSession(token) {
      const session = await sessions.findOne({ _id: hashToken(token), expires_at: { $gt: clock.now() } });
      return session ? users.findOne({ _id: session.user_id }) : null;
    },
    async closeSession(token) {
      await sessions.deleteOne({ _id: hashToken(token) });
    },
    async ensureIndexes() {
      await users.createIndex({ email: 1 }, { unique: true });
      await users.createIndex({ created_at: -1, _id: -1 });
      await sessions.createIndex({ user_id: 1 });
      // Ended sessions: deleted by MongoDB's TTL monitor (and the hourly prune job); reads check expires_at themselves.
      await sessions.createIndex({ expires_at: 1 }, { expireAfterSeconds: 0 });
    },
  };
}
