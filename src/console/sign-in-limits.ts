import type { Collection, Db } from "mongodb";
import type { Clock } from "../shared/clock.js";
import { refusal, type DescribedError } from "../shared/errors.js";

/** Length of a sign-in failure window: 15 minutes, fixed to the clock. */
export const SIGN_IN_WINDOW_MS = 15 * 60_000;

/** Who a sign-in attempt is counted against. */
export interface SignInSubjects {
  /** Client address of the attempt. */
  address: string;
  /** The account tried: an email, or "console-token" for the operator's token; none for a session token. */
  account?: string;
}

/** Failures allowed per window before every attempt is refused, the right secret included. */
export interface SignInLimitsOptions {
  /** Per account (email or the console token). */
  perAccount: number;
  /** Per client address, whatever the account. */
  perAddress: number;
}

/**
 * Limits on console sign-in (a password Login, or a console token presented
 * as a bearer token): failures are counted per account and per client
 * address in fixed 15-minute windows shared through MongoDB; once either
 * count reaches its limit, every attempt of that account or address is
 * refused with `rate_limited` until the window ends, even with the right
 * secret, so that guessing learns nothing while the limit holds.
 */
export interface SignInLimits {
  /** The refusal when a subject is over its limit (Retry-After in details), else undefined. One read. */
  check(subjects: SignInSubjects): Promise<DescribedError | undefined>;
  /** Counts one failed attempt against each subject. One write. */
  recordFailure(subjects: SignInSubjects): Promise<void>;
  ensureIndexes(): Promise<void>;
}

interface FailureWindow {
  /** `<address|account>:<value>|<window start ms>` */
  _id: string;
  count: number;
  /** The window's end: the TTL index removes it then. */
  expires_at: Date;
}

/** Creates the sign-in limits on the `console_sign_in_failures` collection. */
export function createSignInLimits(db: Db, clock: Clock, options: SignInLimitsOptions): SignInLimits {
  const collection: Collection<FailureWindow> = db.collection<FailureWindow>("console_sign_in_failures");
  const windowOf = () => Math.floor(clock.now().getTime() / SIGN_IN_WINDOW_MS) * SIGN_IN_WINDOW_MS;
  const idsOf = (subjects: SignInSubjects, start: number) => ({
    address: `address:${subjects.address}|${start}`,
    account: subjects.account === undefined ? undefined : `account:${subjects.account}|${start}`,
  });

  return {
    async check(subjects) {
      const start = windowOf();
      const ids = idsOf(subjects, start);
      const found = await collection.find({ _id: { $in: [ids.address, ...(ids.account ? [ids.account] : [])] } }).toArray();
      const count = (id: string | undefined) => found.find((w) => w._id === id)?.count ?? 0;
      const over = count(ids.account) >= options.perAccount ? "for this account" : count(ids.address) >= options.perAddress ? "from this address" : undefined;
      if (!over) return undefined;
      const retryAfter = Math.max(1, Math.ceil((start + SIGN_IN_WINDOW_MS - clock.now().getTime()) / 1000));
      return refusal("rate_limited", `Too many failed sign-ins ${over}; every attempt is refused for ${retryAfter} s`, {
        retry_after_seconds: String(retryAfter),
      });
    },
    async recordFailure(subjects) {
      const start = windowOf();
      const ids = idsOf(subjects, start);
      const expires_at = new Date(start + SIGN_IN_WINDOW_MS);
      await collection.bulkWrite(
        [ids.address, ...(ids.account ? [ids.account] : [])].map((id) => ({
          updateOne: { filter: { _id: id }, update: { $inc: { count: 1 }, $setOnInsert: { expires_at } }, upsert: true },
        })),
        { ordered: false },
      );
    },
    async ensureIndexes() {
      await collection.createIndex({ expires_at: 1 }, { expireAfterSeconds: 0 });
    },
  };
}
