import { describe, expect, test } from "bun:test";
import { WireguardError } from "./errors.ts";
import { clampPrivateKey, generateKeyPair, keyFromHex, keyToHex, publicKeyOf } from "./wireguard-keys.ts";
import { parseGet, renderSet } from "./wireguard-uapi.ts";

const hex = (h: string) => Buffer.from(h, "hex").toString("base64");

describe("keys", () => {
  test("public key matches the RFC 7748 §6.1 test vector", () => {
    const alice = hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
    expect(publicKeyOf(alice)).toBe(hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"));
  });

  test("generated pairs are clamped, distinct and consistent", () => {
    const a = generateKeyPair();
    const b = generateKeyPair();
    expect(a.privateKey).not.toBe(b.privateKey);
    expect(clampPrivateKey(a.privateKey)).toBe(a.privateKey);
    expect(publicKeyOf(a.privateKey)).toBe(a.publicKey);
    expect(Buffer.from(a.publicKey, "base64")).toHaveLength(32);
  });

  test("hex ↔ base64", () => {
    const key = generateKeyPair().publicKey;
    expect(keyToHex(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(keyFromHex(keyToHex(key))).toBe(key);
  });

  test.each(["", "abc", "YGbyMPpWKvqfCg8wD1TchmBPBFWCE4USd0ut7dl0i1M", Buffer.alloc(31).toString("base64")])(
    "refuses key %p",
    (bad) => {
      expect(() => keyToHex(bad, "peer public key")).toThrow(`peer public key "${bad}" is not a base64 WireGuard key`);
    },
  );
});

describe("UAPI text protocol", () => {
  const priv = hex("a8".repeat(32));
  const peer = hex("01".repeat(32));

  test("set replaces peers and their allowed IPs", () => {
    expect(
      renderSet({
        privateKey: priv,
        listenPort: 51820,
        peers: [
          {
            publicKey: peer,
            endpoint: "198.18.0.2:51820",
            allowedIps: ["10.0.0.0/16", "10.1.0.0/16"],
            persistentKeepalive: 25,
          },
        ],
      }),
    ).toBe(
      [
        "set=1",
        `private_key=${"a8".repeat(32)}`,
        "listen_port=51820",
        "replace_peers=true",
        `public_key=${"01".repeat(32)}`,
        "endpoint=198.18.0.2:51820",
        "persistent_keepalive_interval=25",
        "replace_allowed_ips=true",
        "allowed_ip=10.0.0.0/16",
        "allowed_ip=10.1.0.0/16",
        "",
        "",
      ].join("\n"),
    );
  });

  test("get is parsed into a typed status", () => {
    const text = [
      `private_key=${"a8".repeat(32)}`,
      "listen_port=51820",
      `public_key=${"01".repeat(32)}`,
      `preshared_key=${"00".repeat(32)}`,
      "protocol_version=1",
      "endpoint=198.18.0.2:51820",
      "last_handshake_time_sec=1700000000",
      "last_handshake_time_nsec=5",
      "tx_bytes=100",
      "rx_bytes=200",
      "persistent_keepalive_interval=25",
      "allowed_ip=10.0.0.0/16",
      "allowed_ip=10.1.0.0/16",
      "errno=0",
      "",
      "",
    ].join("\n");
    expect(parseGet(text, "wg0")).toEqual({
      privateKey: priv,
      listenPort: 51820,
      peers: [
        {
          publicKey: peer,
          endpoint: "198.18.0.2:51820",
          allowedIps: ["10.0.0.0/16", "10.1.0.0/16"],
          persistentKeepalive: 25,
          lastHandshakeSec: 1700000000,
          rxBytes: 200,
          txBytes: 100,
        },
      ],
    });
  });

  test("a non-zero errno is a WireguardError naming the device", () => {
    expect(() => parseGet("errno=2\n\n", "wg7")).toThrow(WireguardError);
    expect(() => parseGet("errno=2\n\n", "wg7")).toThrow("get on wg7 failed with errno 2");
  });
});
