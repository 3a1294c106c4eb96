import { createDecipheriv, createHash, createHmac, timingSafeEqual } from "node:crypto";
import { Readable, Transform } from "node:stream";
import type { ReadableStream as WebReadableStream } from "node:stream/web";
import { MediaFetchError, type FetchedMedia, type MediaReference } from "../network.js";
import type { GraphOptions } from "./graph-client.js";

/** Length of the truncated HMAC-SHA256 at the end of an encrypted CDN file, in bytes. */
const HMAC_TAIL_BYTES = 10;

/**
 * GETs `url`, waiting at most `timeoutMs` for the answer's head (the body
 * then streams at the network's pace).
 *
 * @throws MediaFetchError: retryable for timeouts, connection errors, HTTP
 *   5xx and 429; permanent for other non-2xx answers.
 */
async function get(url: string, headers: Record<string, string>, timeoutMs: number, what: string): Promise<Response> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  let res: Response;
  try {
    res = await fetch(url, { headers, signal: abort.signal, redirect: "follow" });
  } catch (err) {
    throw new MediaFetchError(`${what} unreachable: ${(err as Error).message}`, true);
  } finally {
    clearTimeout(timer);
  }
  if (res.ok && res.body) return res;
  const text = await res.text().catch(() => "");
  const graphMessage = (() => {
    try {
      return (JSON.parse(text) as { error?: { message?: string } }).error?.message;
    } catch {
      return undefined;
    }
  })();
  throw new MediaFetchError(`${what} answered HTTP ${res.status}${graphMessage ? `: ${graphMessage}` : ""}`, res.status >= 500 || res.status === 429);
}

const bodyOf = (res: Response) => Readable.fromWeb(res.body as unknown as WebReadableStream<Uint8Array>);

/**
 * Downloads a medium through the Cloud API, as
 * https://developers.facebook.com/docs/whatsapp/cloud-api/reference/media#download-media
 * describes: GET /{version}/{media-id} with the access token answers
 * `{"messaging_product","url","mime_type","sha256","file_size","id"}`, then
 * GET of that url (valid for 5 minutes) with the same token answers the
 * bytes. A medium in WhatsApp Flows' encrypted form (cdn_url and
 * encryption_metadata) is downloaded from its CDN URL without the token and
 * decrypted (see createMediaDecipher).
 *
 * @throws MediaFetchError (retryable for outages).
 */
export async function fetchMedia(options: GraphOptions, media: MediaReference): Promise<FetchedMedia> {
  if (media.encrypted) {
    const decipher = createMediaDecipher(media.encrypted);
    const res = await get(media.encrypted.cdnUrl, {}, options.timeoutMs, "WhatsApp CDN");
    const body = bodyOf(res);
    body.on("error", (err) => decipher.destroy(new MediaFetchError(`Download from the WhatsApp CDN broke off: ${err.message}`, true)));
    return { body: body.pipe(decipher) };
  }
  const auth = { authorization: `Bearer ${options.accessToken}` };
  const infoRes = await get(`${options.baseUrl}/${options.version}/${encodeURIComponent(media.id)}`, auth, options.timeoutMs, "Graph API media endpoint");
  let info: { url?: unknown; mime_type?: unknown; sha256?: unknown; file_size?: unknown };
  try {
    info = (await infoRes.json()) as typeof info;
  } catch {
    throw new MediaFetchError("Graph API media endpoint answered something that is not JSON", true);
  }
  if (typeof info.url !== "string" || info.url === "") throw new MediaFetchError(`Graph API gave no download URL for medium ${media.id}`, false);
  const res = await get(info.url, auth, options.timeoutMs, "WhatsApp media download");
  const size = Number(info.file_size);
  return {
    body: bodyOf(res),
    mimeType: typeof info.mime_type === "string" ? info.mime_type : undefined,
    sizeBytes: Number.isSafeInteger(size) && size >= 0 && info.file_size !== undefined ? size : undefined,
    sha256: typeof info.sha256 === "string" && info.sha256 !== "" ? info.sha256 : undefined,
  };
}

function sameBase64(digest: Buffer, expected: string): boolean {
  const given = Buffer.from(expected, "base64");
  return given.length === digest.length && timingSafeEqual(given, digest);
}

/**
 * Decrypts and validates a WhatsApp Flows medium as a stream, following
 * https://developers.facebook.com/docs/whatsapp/flows/reference/media_upload
 * ("Decrypting and validating media"): the CDN file is the AES-256-CBC
 * ciphertext (PKCS#7 padding) followed by the first 10 bytes of
 * HMAC-SHA256(hmac_key, iv ‖ ciphertext); SHA-256 of the whole CDN file must
 * equal encrypted_hash and SHA-256 of the plaintext must equal
 * plaintext_hash (all base64). Plaintext flows out as it is decrypted; the
 * checks that need the whole file fail the stream at its end, so a
 * consumer must discard what it wrote when the stream errors.
 *
 * @throws MediaFetchError (permanent) at once for keys or iv of the wrong
 *   length; the stream fails with one when a check fails.
 */
export function createMediaDecipher(meta: NonNullable<MediaReference["encrypted"]>): Transform {
  const key = Buffer.from(meta.encryptionKey, "base64");
  const iv = Buffer.from(meta.iv, "base64");
  const hmacKey = Buffer.from(meta.hmacKey, "base64");
  if (key.length !== 32 || iv.length !== 16 || hmacKey.length === 0) {
    throw new MediaFetchError("Encrypted medium has an encryption_key that is not 32 bytes, an iv that is not 16 bytes or no hmac_key", false);
  }
  const fileHash = createHash("sha256");
  const plainHash = createHash("sha256");
  const hmac = createHmac("sha256", hmacKey).update(iv);
  const decipher = createDecipheriv("aes-256-cbc", key, iv);
  let tail = Buffer.alloc(0);
  const fail = (check: string) => new MediaFetchError(`Encrypted medium failed its integrity check: ${check}`, false);
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      fileHash.update(chunk);
      const all = tail.length > 0 ? Buffer.concat([tail, chunk]) : chunk;
      const cut = Math.max(0, all.length - HMAC_TAIL_BYTES);
      tail = Buffer.from(all.subarray(cut));
      const ciphertext = all.subarray(0, cut);
      if (ciphertext.length > 0) {
        hmac.update(ciphertext);
        const plain = decipher.update(ciphertext);
        plainHash.update(plain);
        if (plain.length > 0) this.push(plain);
      }
      done();
    },
    flush(done) {
      if (tail.length < HMAC_TAIL_BYTES) return done(fail("the file is shorter than its HMAC"));
      if (!sameBase64(fileHash.digest(), meta.encryptedHash)) return done(fail("SHA-256 of the CDN file does not match encrypted_hash"));
      if (!timingSafeEqual(hmac.digest().subarray(0, HMAC_TAIL_BYTES), tail)) return done(fail("HMAC-SHA256 does not match"));
      let last: Buffer;
      try {
        last = decipher.final();
      } catch {
        return done(fail("AES-256-CBC padding is not valid"));
      }
      plainHash.update(last);
      if (!sameBase64(plainHash.digest(), meta.plaintextHash)) return done(fail("SHA-256 of the decrypted file does not match plaintext_hash"));
      done(null, last.length > 0 ? last : undefined);
    },
  });
}
