import { afterAll, describe, expect, test } from "bun:test";
import { KubeConfig } from "./kubeconfig.ts";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execCredentialSource, tokenFileSource } from "./credentials.ts";

const dir = mkdtempSync(join(tmpdir(), "credentials-unit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A plug-in that counts its runs in a file and answers token-<run>, expiring per $EXPIRES. */
function plugin(name: string, body = ""): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    `#!/bin/sh
n=$(($(cat "$0.runs" 2>/dev/null || echo 0) + 1)); echo $n > "$0.runs"
echo "$KUBERNETES_EXEC_INFO" > "$0.info"
${body}
exp=""; [ -n "$EXPIRES" ] && exp=",\\"expirationTimestamp\\":\\"$EXPIRES\\""
echo "{\\"apiVersion\\":\\"client.authentication.k8s.io/v1\\",\\"kind\\":\\"ExecCredential\\",\\"status\\":{\\"token\\":\\"token-$n\\"$exp}}"
`,
  );
  chmodSync(file, 0o755);
  return file;
}

const kc = () => {
  const k = new KubeConfig();
  k.loadFromOptions({
    clusters: [{ name: "c", server: "https://127.0.0.1:6443", skipTLSVerify: false }],
    users: [{ name: "u" }],
    contexts: [{ name: "c", cluster: "c", user: "u" }],
    currentContext: "c",
  });
  return k;
};
const exec = (command: string, env: Record<string, string> = {}) => ({
  command,
  apiVersion: "client.authentication.k8s.io/v1",
  env: Object.entries(env).map(([name, value]) => ({ name, value })),
});

describe("execCredentialSource", () => {
  test("runs once while the credential is valid, and again once it expires", async () => {
    let now = Date.parse("2030-01-01T00:00:00Z");
    const cmd = plugin("expiring");
    const source = execCredentialSource(exec(cmd, { EXPIRES: "2030-01-01T00:01:00Z" }), kc(), { now: () => now });
    expect((await source.current()).headers.authorization).toBe("Bearer token-1");
    now += 59_000;
    expect((await source.current()).headers.authorization).toBe("Bearer token-1");
    now += 2_000;
    expect((await source.current()).headers.authorization).toBe("Bearer token-2");
    expect(source.refreshes).toBe(1);
  });

  test("without expirationTimestamp the credential lasts until the server refuses it", async () => {
    const source = execCredentialSource(exec(plugin("until-refused")), kc());
    const first = await source.current();
    expect(await source.current()).toEqual(first);
    source.rejected(first);
    expect((await source.current()).headers.authorization).toBe("Bearer token-2");
  });

  test("a refusal of an older credential does not throw away a newer one", async () => {
    const source = execCredentialSource(exec(plugin("stale-refusal")), kc());
    const first = await source.current();
    source.rejected(first);
    const second = await source.current();
    source.rejected(first);
    expect(await source.current()).toEqual(second);
  });

  test("concurrent requests share one run", async () => {
    const cmd = plugin("concurrent", "sleep 0.2");
    const source = execCredentialSource(exec(cmd), kc());
    await Promise.all([source.current(), source.current(), source.current()]);
    expect(readFileSync(`${cmd}.runs`, "utf8").trim()).toBe("1");
  });

  test("the plug-in gets KUBERNETES_EXEC_INFO without the cluster unless provideClusterInfo", async () => {
    const cmd = plugin("info");
    await execCredentialSource(exec(cmd), kc()).current();
    expect(JSON.parse(readFileSync(`${cmd}.info`, "utf8"))).toEqual({
      apiVersion: "client.authentication.k8s.io/v1",
      kind: "ExecCredential",
      spec: { interactive: false },
    });
    await execCredentialSource({ ...exec(cmd), provideClusterInfo: true }, kc()).current();
    expect(JSON.parse(readFileSync(`${cmd}.info`, "utf8")).spec.cluster.server).toBe("https://127.0.0.1:6443");
  });

  test("a failing plug-in's stderr is in the error", async () => {
    const cmd = plugin("failing", "echo 'no login session' >&2; exit 3");
    await expect(execCredentialSource(exec(cmd), kc()).current()).rejects.toThrow(/exited with 3: no login session/);
  });

  test("an answer of another apiVersion is refused", async () => {
    const cmd = plugin("v1beta1");
    await expect(
      execCredentialSource({ ...exec(cmd), apiVersion: "client.authentication.k8s.io/v1beta1" }, kc()).current(),
    ).rejects.toThrow(
      /answered client.authentication.k8s.io\/v1 ExecCredential; the kubeconfig asks for client.authentication.k8s.io\/v1beta1/,
    );
  });

  test("interactiveMode Always is refused before running anything", async () => {
    await expect(
      execCredentialSource({ ...exec("/nonexistent"), interactiveMode: "Always" }, kc()).current(),
    ).rejects.toThrow(/needs a terminal/);
  });
});

describe("tokenFileSource", () => {
  test("re-reads the file when it is rewritten, and keeps the last token while it is missing", async () => {
    const file = join(dir, "token");
    writeFileSync(file, "first\n");
    const source = tokenFileSource(file);
    expect((await source.current()).headers.authorization).toBe("Bearer first");
    writeFileSync(file, "second-token\n");
    expect((await source.current()).headers.authorization).toBe("Bearer second-token");
    rmSync(file);
    expect((await source.current()).headers.authorization).toBe("Bearer second-token");
    expect(source.refreshes).toBe(1);
  });

  test("a missing file before the first read names the kubeconfig field", async () => {
    await expect(tokenFileSource(join(dir, "absent")).current()).rejects.toThrow(/users\[\]\.user\.tokenFile/);
  });
});
