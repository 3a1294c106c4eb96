import type { Collection, Document, Filter } from "mongodb";
import { invalidArgument } from "../shared/errors.js";

/** Default and largest page sizes of every list (README "Design" §16, AIP-158). */
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** A page of a list. */
export interface Page<T> {
  /** The items of this page. */
  items: T[];
  /** Opaque token of the next page; undefined on the last page. */
  nextPageToken: string | undefined;
  /** Count of all items matching the filter, across pages. */
  total: number;
}

/** What a list request asks for. */
export interface PageRequest {
  /** 0 means DEFAULT_PAGE_SIZE; above MAX_PAGE_SIZE is cut down; negative is refused. */
  pageSize: number;
  /** Token from a previous page, or "" for the first page. */
  pageToken: string;
}

/** Documents that can be listed: a string id (and a Date field to sort by). */
export interface Listable {
  _id: string;
}

interface Cursor {
  /** Sort value (milliseconds since the epoch). */
  t: number;
  /** Id of the last item of the previous page. */
  id: string;
}

function decodeToken(token: string): Cursor {
  try {
    const cursor = JSON.parse(Buffer.from(token, "base64url").toString("utf8")) as Cursor;
    if (typeof cursor.t === "number" && typeof cursor.id === "string") return cursor;
  } catch {
    // fall through
  }
  throw invalidArgument("page_token", "is not a token returned by this list");
}

/**
 * Reads one page of `collection` matching `filter`, newest first by
 * `sortField` (a Date field) then by id, with an opaque cursor token
 * (base64url of the last item's sort value and id; never a skip count).
 *
 * A negative page_size never arrives: every list request declares
 * `page_size >= 0` in its proto (checked by the validation interceptor; a
 * test checks every list has the rule).
 *
 * @throws ConnectError invalid_argument for a bad page_token.
 */
export async function listPage<T extends Listable>(
  collection: Collection<T>,
  filter: Filter<T>,
  request: PageRequest,
  sortField = "created_at",
): Promise<Page<T>> {
  const size = request.pageSize <= 0 ? DEFAULT_PAGE_SIZE : Math.min(request.pageSize, MAX_PAGE_SIZE);
  let pageFilter: Document = filter;
  if (request.pageToken !== "") {
    const cursor = decodeToken(request.pageToken);
    const at = new Date(cursor.t);
    pageFilter = {
      $and: [filter, { $or: [{ [sortField]: { $lt: at } }, { [sortField]: at, _id: { $lt: cursor.id } }] }],
    };
  }
  const [rows, total] = await Promise.all([
    collection
      .find(pageFilter as Filter<T>)
      .sort({ [sortField]: -1, _id: -1 })
      .limit(size + 1)
      .toArray(),
    collection.countDocuments(filter),
  ]);
  const items = rows.slice(0, size) as T[];
  const last = items[items.length - 1];
  const nextPageToken =
    rows.length > size && last
      ? Buffer.from(JSON.stringify({ t: ((last as Record<string, unknown>)[sortField] as Date).getTime(), id: last._id })).toString("base64url")
      : undefined;
  return { items, nextPageToken, total };
}
