import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import mime from "mime-types";
import type { MediaReference } from "../network/network.js";

/** A file named in a submission, before it is fetched. */
export interface SubmittedFile {
  /** The form field that holds it. */
  field: string;
  fileName: string;
  /** Content type as the submission states it, else guessed from the file name (application/octet-stream when unknown). */
  mimeType: string;
  /** SHA-256 the submission states for the file (base64 or hex), or null. */
  sha256: string | null;
  media: MediaReference;
}

/** A form submission read from the network's response_json. */
export interface Submission {
  /** The flow_token it carries ("" when it has none). */
  flowToken: string;
  /** The other fields, without the flow token and the file fields. */
  response: JsonObject;
  /** Uploaded files in the order of the fields and of each field's list. */
  files: SubmittedFile[];
}

const isObject = (v: JsonValue | undefined): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);
const text = (v: JsonValue | undefined) => (typeof v === "string" && v !== "" ? v : undefined);

/** The type to record for a file: the stated one (lower case, without parameters), else by file name. */
export function mimeTypeOf(stated: string | undefined, fileName: string): string {
  const given = stated?.split(";")[0]?.trim().toLowerCase();
  if (given) return given;
  return mime.lookup(fileName) || "application/octet-stream";
}

/**
 * Reads one media entry of a PhotoPicker or DocumentPicker value, in either
 * form Meta documents
 * (https://developers.facebook.com/docs/whatsapp/flows/reference/media_upload):
 * the response message's `{"file_name","mime_type","sha256","id"}`, or the
 * encrypted `{"media_id","cdn_url","file_name","encryption_metadata":
 * {"encrypted_hash","iv","encryption_key","hmac_key","plaintext_hash"}}`.
 * Undefined when `value` is neither.
 */
function mediaEntry(field: string, value: JsonValue): SubmittedFile | undefined {
  if (!isObject(value)) return undefined;
  const fileName = text(value.file_name);
  if (!fileName) return undefined;
  const meta = value.encryption_metadata;
  const cdnUrl = text(value.cdn_url);
  if (isObject(meta) && cdnUrl) {
    const [encryptedHash, iv, encryptionKey, hmacKey, plaintextHash] = ["encrypted_hash", "iv", "encryption_key", "hmac_key", "plaintext_hash"].map((k) => text(meta[k]));
    if (!encryptedHash || !iv || !encryptionKey || !hmacKey || !plaintextHash) return undefined;
    return {
      field,
      fileName,
      mimeType: mimeTypeOf(text(value.mime_type), fileName),
      sha256: null,
      media: { id: text(value.media_id) ?? "", encrypted: { cdnUrl, encryptedHash, iv, encryptionKey, hmacKey, plaintextHash } },
    };
  }
  const id = text(value.id) ?? text(value.media_id);
  if (!id) return undefined;
  return { field, fileName, mimeType: mimeTypeOf(text(value.mime_type), fileName), sha256: text(value.sha256) ?? null, media: { id } };
}

/**
 * Reads a submission from the network's response_json text: the flow_token,
 * the fields, and the uploaded files (a field whose value is a non-empty list
 * of media entries). Text that is not a JSON object gives an empty
 * submission (the raw text is kept on the record).
 */
export function parseSubmission(responseJson: string): Submission {
  let parsed: JsonValue;
  try {
    parsed = JSON.parse(responseJson) as JsonValue;
  } catch {
    return { flowToken: "", response: {}, files: [] };
  }
  if (!isObject(parsed)) return { flowToken: "", response: {}, files: [] };
  const fields: [string, JsonValue][] = [];
  const files: SubmittedFile[] = [];
  for (const [key, value] of Object.entries(parsed)) {
    if (key === "flow_token") continue;
    const entries = Array.isArray(value) && value.length > 0 ? value.map((v) => mediaEntry(key, v)) : [];
    if (entries.length > 0 && entries.every((e) => e !== undefined)) files.push(...(entries as SubmittedFile[]));
    else fields.push([key, value]);
  }
  // Object.fromEntries defines own properties: a field named "__proto__" stays a field, never the prototype.
  const response = Object.fromEntries(fields) as JsonObject;
  return { flowToken: typeof parsed.flow_token === "string" ? parsed.flow_token : "", response, files };
}
