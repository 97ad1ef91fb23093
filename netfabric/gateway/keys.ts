// The cluster's WireGuard key pair, kept in the Secret the network manager reads (Liqo's
// wireguard-pubkey, label net.liqo.io/key=wireguard, data publicKey/privateKey). Every gateway
// replica uses the same pair, so a standby that takes over is the same peer for the remote side.
// The gateway's public endpoint is written on the same Secret (annotation), where the network
// manager already watches.
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { Resources, type KubeObject } from "../../core/kube/resources.ts";
import { ENDPOINT_ANNOTATION, KEYS_LABEL, PUBLIC_KEY_FIELD } from "../shared/labels.ts";
import { generateKeyPair, publicKeyOf, type KeyPair } from "../os/wireguard-keys.ts";

export const KEY_SECRET_NAME = "wireguard-pubkey";
export const PRIVATE_KEY_FIELD = "privateKey";

type Secret = KubeObject & { data?: Record<string, string> };

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");
const unb64 = (s: string | undefined) =>
  s === undefined ? undefined : Buffer.from(s, "base64").toString("utf8").trim();

function keysOf(secret: Secret): KeyPair | string {
  const privateKey = unb64(secret.data?.[PRIVATE_KEY_FIELD]);
  const where = `Secret ${secret.metadata.namespace}/${secret.metadata.name}`;
  if (!privateKey) return `${where} has no data.${PRIVATE_KEY_FIELD}`;
  try {
    return { privateKey, publicKey: publicKeyOf(privateKey) };
  } catch (err) {
    return `${where}: ${(err as Error).message}`;
  }
}

/** Reads the key pair, creating the Secret when missing; a damaged Secret is an error naming the fix. */
export async function ensureKeys(client: KubeClient, namespace: string): Promise<KeyPair> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const found = (await client.list<Secret>(Resources.secrets, { namespace, labelSelector: KEYS_LABEL })).items;
    if (found.length > 1) {
      throw new Error(
        `${found.length} Secrets labelled ${KEYS_LABEL} in ${namespace} (${found.map((s) => s.metadata.name).join(", ")}); keep one`,
      );
    }
    if (found.length === 1) {
      const keys = keysOf(found[0]!);
      if (typeof keys === "string")
        throw new Error(`${keys}; delete the Secret and the gateway creates a new key pair`);
      // Keep data.publicKey right for the network manager, whoever wrote the Secret.
      if (unb64(found[0]!.data?.[PUBLIC_KEY_FIELD]) !== keys.publicKey) {
        await client.mergePatch(Resources.secrets, found[0]!.metadata.name!, namespace, {
          data: { [PUBLIC_KEY_FIELD]: b64(keys.publicKey) },
        });
      }
      return keys;
    }
    const keys = generateKeyPair();
    try {
      await client.create(Resources.secrets, {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: KEY_SECRET_NAME, namespace, labels: { [KEYS_LABEL]: "wireguard" } },
        data: { [PRIVATE_KEY_FIELD]: b64(keys.privateKey), [PUBLIC_KEY_FIELD]: b64(keys.publicKey) },
      });
      return keys;
    } catch (err) {
      // Another replica created it first: use theirs.
      if (!(err instanceof KubeApiError && err.status === 409)) throw err;
    }
  }
  throw new Error(`could not read or create the key Secret in ${namespace}`);
}

export async function writeEndpoint(client: KubeClient, namespace: string, endpoint: string): Promise<void> {
  const [secret] = (await client.list<Secret>(Resources.secrets, { namespace, labelSelector: KEYS_LABEL })).items;
  if (!secret) throw new Error(`no Secret labelled ${KEYS_LABEL} in ${namespace}`);
  if (secret.metadata.annotations?.[ENDPOINT_ANNOTATION] === endpoint) return;
  await client.mergePatch(Resources.secrets, secret.metadata.name!, namespace, {
    metadata: { annotations: { [ENDPOINT_ANNOTATION]: endpoint } },
  });
}
