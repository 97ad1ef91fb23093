import { afterAll, describe, expect, test } from "bun:test";
import { KubeConfig as ClientNodeKubeConfig } from "@kubernetes/client-node";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credentialSource } from "./credentials.ts";
import { KubeConfig } from "./kubeconfig.ts";

const dir = mkdtempSync(join(tmpdir(), "kubeconfig-unit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every field a kubeconfig's clusters, users and contexts carry, two of each. */
const full = `apiVersion: v1
kind: Config
current-context: b
clusters:
- name: a
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority-data: Q0E=
    tls-server-name: api.a
    proxy-url: http://proxy:3128
- name: b
  cluster:
    server: https://b.example:443
    certificate-authority: /etc/ca.crt
    insecure-skip-tls-verify: true
users:
- name: ua
  user:
    client-certificate-data: Q0VSVA==
    client-key-data: S0VZ
    as: someone
- name: ub
  user:
    token: t0ken
    username: admin
    password: secret
    client-certificate: /etc/c.crt
    client-key: /etc/c.key
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: get-token
contexts:
- name: a
  context: { cluster: a, user: ua, namespace: ns-a }
- name: b
  context: { cluster: b, user: ub }
`;

describe("KubeConfig", () => {
  test("reads every field as client-node's KubeConfig reads it", () => {
    const ours = new KubeConfig();
    ours.loadFromString(full);
    const theirs = new ClientNodeKubeConfig();
    theirs.loadFromString(full);
    expect(ours.clusters).toEqual(theirs.clusters);
    expect(ours.users).toEqual(theirs.users);
    expect(ours.contexts).toEqual(theirs.contexts);
    expect(ours.getCurrentContext()).toBe(theirs.getCurrentContext());
    expect(ours.getCurrentCluster()).toEqual(theirs.getCurrentCluster()!);
    expect(ours.getCurrentUser()).toEqual(theirs.getCurrentUser()!);
    expect(ours.getCurrentCluster()).toMatchObject({ server: "https://b.example:443", skipTLSVerify: true });
    ours.currentContext = "a";
    expect(ours.getCurrentCluster()).toMatchObject({ server: "https://10.0.0.1:6443", tlsServerName: "api.a" });
    expect(ours.getCurrentUser()).toMatchObject({ certData: "Q0VSVA==", impersonateUser: "someone" });
  });

  test("a missing or unknown context has no cluster and no user", () => {
    const kc = new KubeConfig();
    kc.loadFromString(full.replace("current-context: b", "current-context: gone"));
    expect(kc.getCurrentCluster()).toBeNull();
    expect(kc.getCurrentUser()).toBeNull();
    kc.loadFromString(full.replace("current-context: b\n", ""));
    expect(kc.getCurrentContext()).toBe("");
    expect(kc.getCurrentCluster()).toBeNull();
  });

  test("bad input: an entry without its field, a document that is no mapping, text that is no YAML", () => {
    const kc = new KubeConfig();
    expect(() => kc.loadFromString(full.replace("    server: https://b.example:443\n", ""))).toThrow(
      "clusters[1].cluster.server is missing",
    );
    expect(() => kc.loadFromString(full.replace("- name: ua\n", "- nom: ua\n"))).toThrow("users[0].name is missing");
    expect(() => kc.loadFromString("- just\n- a list\n")).toThrow("a kubeconfig must be a mapping");
    expect(() => kc.loadFromString("")).toThrow("a kubeconfig must be a mapping");
    expect(() => kc.loadFromString("clusters: [unclosed")).toThrow();
    // A failed load leaves what was loaded before.
    kc.loadFromString(full);
    expect(() => kc.loadFromString(full.replace("- name: ub\n", "- nom: ub\n"))).toThrow("users[1].name is missing");
    expect(kc.getCurrentUser()?.name).toBe("ub");
  });

  test("an auth-provider's token comes from client-node's authenticator, loaded on the first request, refreshed when expired", async () => {
    const cmd = join(dir, "gcloud");
    writeFileSync(
      cmd,
      `#!/bin/sh\nn=$(($(cat "$0.runs" 2>/dev/null || echo 0) + 1)); echo $n > "$0.runs"\necho "{\\"credential\\":{\\"access_token\\":\\"gcp-$n\\",\\"token_expiry\\":\\"$EXPIRY\\"}}"\n`,
    );
    chmodSync(cmd, 0o755);
    const kc = new KubeConfig();
    kc.loadFromObject({
      clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:6443" } }],
      users: [
        {
          name: "u",
          user: {
            "auth-provider": {
              name: "gcp",
              config: {
                "cmd-path": cmd,
                "token-key": "{.credential.access_token}",
                "expiry-key": "{.credential.token_expiry}",
              },
            },
          },
        },
      ],
      contexts: [{ name: "c", context: { cluster: "c", user: "u" } }],
      "current-context": "c",
    });
    const source = credentialSource(kc);
    process.env.EXPIRY = new Date(Date.now() + 3_600_000).toISOString();
    expect((await source.current()).headers.authorization).toBe("Bearer gcp-1");
    expect((await source.current()).headers.authorization).toBe("Bearer gcp-1");
    process.env.EXPIRY = "2000-01-01T00:00:00Z";
    // The cached token is still valid; once it has expired the provider runs again.
    const user = kc.getCurrentUser()!;
    (user.authProvider as { config: Record<string, unknown> }).config.expiry = "2000-01-01T00:00:00Z";
    expect((await source.current()).headers.authorization).toBe("Bearer gcp-2");
    delete process.env.EXPIRY;
  });

  test("a user with no credential sends no Authorization header", async () => {
    const kc = new KubeConfig();
    kc.loadFromString(full.replace("current-context: b", "current-context: a"));
    expect((await credentialSource(kc).current()).headers).toEqual({});
  });
});
