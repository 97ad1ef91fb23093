import { describe, expect, test } from "bun:test";
import { IpamError } from "./errors.ts";
import { contains, formatCidr, formatIpv4, lastOf, maskOf, overlaps, parseCidr, parseIpv4, remapIp } from "./ipv4.ts";

describe("parseIpv4 / formatIpv4", () => {
  test.each([
    ["0.0.0.0", 0],
    ["255.255.255.255", 0xffffffff],
    ["128.0.0.1", 0x80000001],
    ["10.200.3.4", (10 << 24) + (200 << 16) + (3 << 8) + 4],
  ])("%s ↔ %d", (text, value) => {
    expect(parseIpv4(text)).toBe(value);
    expect(formatIpv4(value)).toBe(text);
  });

  test.each([
    ["10.0.0", "3 dot-separated parts"],
    ["10.0.0.256", "above 255"],
    ["10.0.0.01", "leading zeros"],
    ["10.0.0.-1", "not a decimal"],
    ["a.b.c.d", "not a decimal"],
    ["", "1 dot-separated"],
    ["10.0.0.1/32", "not a decimal"],
  ])("refuses %p", (text, why) => {
    const err = (() => {
      try {
        parseIpv4(text, "podIP");
      } catch (e) {
        return e;
      }
    })() as IpamError;
    expect(err).toBeInstanceOf(IpamError);
    expect(err.code).toBe("InvalidAddress");
    expect(err.message).toContain(`podIP: "${text}"`);
    expect(err.message).toContain(why);
  });
});

describe("parseCidr", () => {
  test.each([
    ["0.0.0.0/0", 0, 0],
    ["10.0.0.0/8", 0x0a000000, 8],
    ["192.168.1.128/25", 0xc0a80180, 25],
    ["255.255.255.255/32", 0xffffffff, 32],
  ])("%s", (text, base, prefix) => {
    expect(parseCidr(text)).toEqual({ base, prefix });
    expect(formatCidr(parseCidr(text))).toBe(text);
  });

  test.each([
    ["10.0.0.1/16", "did you mean 10.0.0.0/16?"],
    ["10.0.0.0", "missing /prefix"],
    ["10.0.0.0/33", "must be 0..32"],
    ["10.0.0.0/016", "must be 0..32"],
    ["10.0.0.0/", "must be 0..32"],
    ["10.0.0.300/24", "above 255"],
  ])("refuses %p", (text, why) => {
    expect(() => parseCidr(text, "serviceCIDR")).toThrow(why);
  });
});

describe("bit arithmetic at the edges", () => {
  test.each([
    [0, 0],
    [1, 0x80000000],
    [8, 0xff000000],
    [31, 0xfffffffe],
    [32, 0xffffffff],
  ])("mask /%d", (p, m) => {
    expect(maskOf(p)).toBe(m);
  });
  test("last address of the top network does not wrap", () => {
    expect(lastOf(parseCidr("128.0.0.0/1"))).toBe(0xffffffff);
  });
  test.each([
    ["10.0.0.0/8", "10.255.255.255", true],
    ["10.0.0.0/8", "11.0.0.0", false],
    ["192.168.0.0/16", "192.167.255.255", false],
  ])("%s contains %s: %p", (c, ip, want) => {
    expect(contains(parseCidr(c), parseIpv4(ip))).toBe(want);
  });
  test.each([
    ["10.0.0.0/8", "10.200.0.0/16", true],
    ["10.0.0.0/16", "10.1.0.0/16", false],
    ["10.0.0.0/15", "10.1.0.0/16", true],
    ["0.0.0.0/0", "200.1.1.0/24", true],
  ])("%s overlaps %s: %p", (a, b, want) => {
    expect(overlaps(parseCidr(a), parseCidr(b))).toBe(want);
    expect(overlaps(parseCidr(b), parseCidr(a))).toBe(want);
  });
  test.each([
    ["10.200.7.9", "10.200.0.0/16", "10.201.0.0/16", "10.201.7.9"],
    ["10.200.255.255", "10.200.0.0/16", "192.168.0.0/16", "192.168.255.255"],
    ["172.16.0.77", "172.16.0.0/24", "200.0.0.0/24", "200.0.0.77"],
  ])("remap %s from %s to %s", (ip, from, to, want) => {
    expect(formatIpv4(remapIp(parseIpv4(ip), parseCidr(from), parseCidr(to)))).toBe(want);
  });
});
