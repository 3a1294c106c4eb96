import dns from "node:dns";
import type { LookupAddress, LookupAllOptions, LookupOneOptions } from "node:dns";
import ipaddr from "ipaddr.js";

/**
 * Where webhooks may go (WEBHOOK_ALLOW_* in README §Configuration). By
 * default only https URLs, and only public unicast addresses: anything that
 * resolves to a private, loopback, link-local or otherwise special range is
 * refused, so that an endpoint URL cannot make the service call into its own
 * network (server-side request forgery).
 */
export interface TargetPolicy {
  /** Allow addresses outside public unicast (private, loopback, link-local …). */
  allowPrivateTargets: boolean;
  /** Allow plain http for loopback hosts (127.0.0.0/8, ::1, "localhost"). */
  allowHttpLoopback: boolean;
}

/** Longest accepted endpoint URL, in characters. */
export const MAX_URL_LENGTH = 2048;

/** Raised (through the connection) when a host resolves to a refused address. */
export class BlockedAddressError extends Error {
  override name = "BlockedAddressError";
  readonly code = "ERR_WEBHOOK_BLOCKED_ADDRESS";
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`${host} resolves to ${address}, a private, loopback or link-local address, which webhooks may not call`);
  }
}

/** Parses an IPv4 or IPv6 address literal (IPv4-mapped IPv6 counts as IPv4), or undefined. */
export function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) return ipaddr.IPv4.parse(bare);
  if (!ipaddr.IPv6.isValid(bare)) return undefined;
  const v6 = ipaddr.IPv6.parse(bare);
  return v6.isIPv4MappedAddress() ? v6.toIPv4Address() : v6;
}

/**
 * True when `address` is not a public unicast address: private, loopback,
 * link-local, unique-local, carrier-grade NAT, multicast, reserved,
 * unspecified, and the IPv6 ranges that embed IPv4 addresses (6to4, NAT64 …).
 */
export function isBlockedAddress(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  return address.range() !== "unicast";
}

function isLoopbackHost(host: string): boolean {
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  return parseAddress(host)?.range() === "loopback";
}

/**
 * Checks an endpoint URL (console create and update). Returns the rule it
 * breaks, or undefined when it is acceptable: an absolute URL of at most
 * 2048 characters, https (http only for a loopback host when the policy
 * allows it), without user name, password or fragment, and not an address
 * literal the policy refuses. Host names are checked again, after
 * resolution, at every attempt.
 */
export function checkEndpointUrl(text: string, policy: TargetPolicy): string | undefined {
  if (text.length === 0 || text.length > MAX_URL_LENGTH) return `must be 1 to ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return "must be an absolute URL such as https://example.com/webhooks";
  }
  if (url.protocol === "http:") {
    if (!policy.allowHttpLoopback || !isLoopbackHost(url.hostname)) return "must use https";
  } else if (url.protocol !== "https:") {
    return "must use https";
  }
  if (url.username !== "" || url.password !== "") return "must not contain a user name or password";
  if (url.hash !== "") return "must not contain a fragment (#…)";
  const literal = parseAddress(url.hostname);
  if (literal && isBlockedAddress(literal) && !policy.allowPrivateTargets) {
    return "must not point to a private, loopback or link-local address";
  }
  return undefined;
}

/**
 * The refusal for a URL whose host is an address literal the policy
 * refuses (Node does not resolve literals, so guardedLookup never sees
 * them), or undefined.
 */
export function blockedLiteral(url: URL, policy: TargetPolicy): BlockedAddressError | undefined {
  if (policy.allowPrivateTargets) return undefined;
  const literal = parseAddress(url.hostname);
  return literal && isBlockedAddress(literal) ? new BlockedAddressError(url.hostname, literal.toString()) : undefined;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net/tls connections (undici's `connect` option) that
 * resolves like dns.lookup and fails with BlockedAddressError when any
 * address of the host is refused by the policy. Checking the addresses the
 * connection really uses defeats DNS rebinding.
 */
export function guardedLookup(policy: TargetPolicy) {
  return (hostname: string, options: LookupOneOptions | LookupAllOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      if (!policy.allowPrivateTargets) {
        for (const { address } of addresses) {
          const parsed = parseAddress(address);
          if (!parsed || isBlockedAddress(parsed)) return callback(new BlockedAddressError(hostname, address), []);
        }
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0] as LookupAddress;
      callback(null, first.address, first.family);
    });
  };
}
