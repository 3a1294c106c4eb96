import ipaddr from "ipaddr.js";

/** A parsed allow-list entry: an address range (a single address is a /32 or /128). */
export type IpRange = [ipaddr.IPv4 | ipaddr.IPv6, number];

function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (ipaddr.IPv6.isValid(text)) return ipaddr.IPv6.parse(text);
  return undefined;
}

/**
 * Parses one entry: an IPv4 address ("203.0.113.7"), an IPv6 address
 * ("2001:db8::1") or a CIDR range of either ("10.0.0.0/8", "2001:db8::/32").
 * Returns undefined for anything else.
 */
export function parseIpRange(entry: string): IpRange | undefined {
  const slash = entry.indexOf("/");
  const address = parseAddress(slash < 0 ? entry : entry.slice(0, slash));
  if (!address) return undefined;
  const max = address.kind() === "ipv4" ? 32 : 128;
  if (slash < 0) return [address, max];
  const bitsText = entry.slice(slash + 1);
  if (!/^\d{1,3}$/.test(bitsText)) return undefined;
  const bits = Number(bitsText);
  return bits <= max ? [address, bits] : undefined;
}

/**
 * True when `address` is allowed by `ranges`: an empty list allows any
 * address (spec §Authentication 5). IPv4-mapped IPv6 addresses count as IPv4.
 */
export function isAddressAllowed(address: string, ranges: readonly IpRange[]): boolean {
  if (ranges.length === 0) return true;
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.process(address);
  return ranges.some(([range, bits]) => parsed.kind() === range.kind() && parsed.match(range, bits));
}
