// The pre-shared token a consumer presents to obtain an identity: Liqo's Secret `auth-token` in the
// liqo namespace, key `token`, 64 random bytes in hex (pkg/auth/tokenutils.go). Rotating the Secret
// revokes the old token for every cluster that has not exchanged it yet.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { KubeApiError } from "../../kube/errors.ts";
import type { KubeClient } from "../../kube/client.ts";
import { Resources, type KubeObject } from "../../kube/resources.ts";
import { ensureNamespace } from "../identity.ts";

export const AUTH_TOKEN_SECRET = "auth-token";
export const AUTH_TOKEN_KEY = "token";

export function generateAuthToken(): string {
  return randomBytes(64).toString("hex");
}

function tokenOf(secret: KubeObject | undefined): string | undefined {
  const data = secret?.data as Record<string, string> | undefined;
  const b64 = data?.[AUTH_TOKEN_KEY];
  if (!b64) return undefined;
  const token = Buffer.from(b64, "base64").toString("utf8").trim();
  return token || undefined;
}

/** The current token, or undefined when the Secret or its key is missing. */
export async function readAuthToken(client: KubeClient, liqoNamespace = "liqo"): Promise<string | undefined> {
  return tokenOf(await client.find(Resources.secrets, AUTH_TOKEN_SECRET, liqoNamespace));
}

/** Creates the Secret with a fresh token when missing (or without a token); returns the token in force. */
export async function ensureAuthToken(client: KubeClient, options: { liqoNamespace?: string } = {}): Promise<string> {
  const ns = options.liqoNamespace ?? "liqo";
  const existing = await client.find(Resources.secrets, AUTH_TOKEN_SECRET, ns);
  const current = tokenOf(existing);
  if (current) return current;
  const token = generateAuthToken();
  if (existing) {
    // Liqo replaces a token Secret that holds no token; the resourceVersion guards against a concurrent fix.
    await client.mergePatch(Resources.secrets, AUTH_TOKEN_SECRET, ns, {
      metadata: { resourceVersion: existing.metadata.resourceVersion },
      data: { [AUTH_TOKEN_KEY]: Buffer.from(token).toString("base64") },
    });
    return token;
  }
  await ensureNamespace(client, ns);
  try {
    await client.create(Resources.secrets, {
      apiVersion: "v1",
      kind: "Secret",
      type: "Opaque",
      metadata: { name: AUTH_TOKEN_SECRET, namespace: ns },
      stringData: { [AUTH_TOKEN_KEY]: token },
    });
    return token;
  } catch (err) {
    // Another installer won the race: its token is the one in force.
    if (err instanceof KubeApiError && err.conflict) return (await readAuthToken(client, ns))!;
    throw err;
  }
}

/** Constant-time comparison: hashing first makes the lengths equal, so neither length nor content leaks. */
export function tokensEqual(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}
