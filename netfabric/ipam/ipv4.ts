// IPv4 addresses as unsigned 32-bit integers held in JS numbers. Every bitwise result goes
// through `>>> 0`, because JS bitwise operators return signed 32-bit values (1.0.0.0 << 7 < 0).
import { invalidAddress, invalidCidr } from "./errors.ts";

export interface Cidr {
  /** Network address (host bits zero), uint32. */
  readonly base: number;
  /** Prefix length 0..32. */
  readonly prefix: number;
}

const octet = /^(0|[1-9][0-9]{0,2})$/;

/** Parses a dotted quad. Leading zeros are refused: some tools read them as octal. */
export function parseIpv4(text: string, field = "address"): number {
  if (typeof text !== "string") throw invalidAddress(String(text), field, "not a string");
  const parts = text.split(".");
  if (parts.length !== 4) throw invalidAddress(text, field, `${parts.length} dot-separated parts instead of 4`);
  let value = 0;
  for (const part of parts) {
    if (!octet.test(part))
      throw invalidAddress(text, field, `octet "${part}" is not a decimal number without leading zeros`);
    const n = Number(part);
    if (n > 255) throw invalidAddress(text, field, `octet ${n} is above 255`);
    value = value * 256 + n;
  }
  return value;
}

export function formatIpv4(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 255}.${(value >>> 8) & 255}.${value & 255}`;
}

export function maskOf(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

export function sizeOf(cidr: Cidr): number {
  return 2 ** (32 - cidr.prefix);
}

export function lastOf(cidr: Cidr): number {
  return cidr.base + sizeOf(cidr) - 1;
}

/** Parses `a.b.c.d/n`. Host bits must be zero: "10.0.0.1/16" is refused with the network it probably meant. */
export function parseCidr(text: string, field = "cidr"): Cidr {
  if (typeof text !== "string") throw invalidCidr(String(text), field, "not a string");
  const slash = text.indexOf("/");
  if (slash < 0) throw invalidCidr(text, field, "missing /prefix, e.g. 10.0.0.0/16");
  const prefixText = text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]?)$/.test(prefixText) || Number(prefixText) > 32) {
    throw invalidCidr(text, field, `prefix "${prefixText}" must be 0..32`);
  }
  const prefix = Number(prefixText);
  let base: number;
  try {
    base = parseIpv4(text.slice(0, slash), field);
  } catch (err) {
    throw invalidCidr(text, field, (err as Error).message);
  }
  const network = (base & maskOf(prefix)) >>> 0;
  if (network !== base) {
    throw invalidCidr(text, field, `host bits are set; did you mean ${formatIpv4(network)}/${prefix}?`);
  }
  return { base, prefix };
}

export function formatCidr(cidr: Cidr): string {
  return `${formatIpv4(cidr.base)}/${cidr.prefix}`;
}

export function contains(cidr: Cidr, ip: number): boolean {
  return ip >= cidr.base && ip <= lastOf(cidr);
}

export function overlaps(a: Cidr, b: Cidr): boolean {
  return a.base <= lastOf(b) && b.base <= lastOf(a);
}

export function sameCidr(a: Cidr, b: Cidr): boolean {
  return a.base === b.base && a.prefix === b.prefix;
}

/** Moves `ip` from network `from` to the same offset in `to`; both must have the same prefix. */
export function remapIp(ip: number, from: Cidr, to: Cidr): number {
  if (from.prefix !== to.prefix) {
    throw new RangeError(`cannot remap between /${from.prefix} and /${to.prefix}: NAT netmap needs equal sizes`);
  }
  return (to.base | (ip & ~maskOf(from.prefix))) >>> 0;
}
