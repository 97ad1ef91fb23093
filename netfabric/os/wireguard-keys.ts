// WireGuard keys are raw 32-byte X25519 keys: base64 for people (wg, Liqo's TunnelEndpoint),
// hex on the UAPI socket.
import { createPrivateKey, createPublicKey, generateKeyPairSync } from "node:crypto";

export interface KeyPair {
  privateKey: string;
  publicKey: string;
}

// DER header of a PKCS#8 X25519 private key; the raw 32 bytes follow it.
const pkcs8X25519 = Buffer.from("302e020100300506032b656e04220420", "hex");

function raw(key: string, field: string): Buffer {
  const bytes = Buffer.from(key, "base64");
  if (bytes.length !== 32 || bytes.toString("base64") !== key) {
    throw new TypeError(
      `${field} "${key}" is not a base64 WireGuard key (32 bytes); generate one with generateKeyPair() or \`wg genkey\``,
    );
  }
  return bytes;
}

/** A fresh key pair, base64-encoded like `wg genkey | wg pubkey`. */
export function generateKeyPair(): KeyPair {
  const { privateKey } = generateKeyPairSync("x25519");
  const clamped = clampPrivateKey(Buffer.from(privateKey.export({ format: "jwk" }).d!, "base64url").toString("base64"));
  return { privateKey: clamped, publicKey: publicKeyOf(clamped) };
}

/** RFC 7748 clamping. X25519 ignores these bits, but WireGuard stores and reports the clamped
 * form, so keys are compared (and generated, like `wg genkey`) clamped. */
export function clampPrivateKey(privateKey: string): string {
  const bytes = Buffer.from(raw(privateKey, "private key"));
  bytes[0]! &= 248;
  bytes[31]! &= 127;
  bytes[31]! |= 64;
  return bytes.toString("base64");
}

export function publicKeyOf(privateKey: string): string {
  const key = createPrivateKey({
    key: Buffer.concat([pkcs8X25519, raw(privateKey, "private key")]),
    format: "der",
    type: "pkcs8",
  });
  return Buffer.from(createPublicKey(key).export({ format: "jwk" }).x!, "base64url").toString("base64");
}

export function keyToHex(key: string, field = "key"): string {
  return raw(key, field).toString("hex");
}

export function keyFromHex(hex: string): string {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new TypeError(`"${hex}" is not a hex WireGuard key (64 lowercase hex digits)`);
  return Buffer.from(hex, "hex").toString("base64");
}
