// Credentials that rotate, read per request as client-go reads them, never once at start-up:
// - an exec plug-in (client.authentication.k8s.io ExecCredential) is run again once its
//   expirationTimestamp has passed, and when the server refuses its credential (401);
// - a token file (kubectl's `tokenFile`, the pod's projected token) is re-read when it changes;
// - a static token, basic auth or another auth provider is what the kubeconfig says.
// The TLS material that does not rotate (CA, server name) stays with the client.
import type { KubeConfig, User } from "./kubeconfig.ts";
import { readFileSync, statSync } from "node:fs";
import { KubeConfigError } from "./errors.ts";
import { InClusterKubeConfig } from "./incluster.ts";

/** What a request carries to authenticate: headers, and a client certificate from an exec plug-in. */
export interface Credential {
  headers: Record<string, string>;
  cert?: string;
  key?: string;
}

export interface CredentialSource {
  /** The credential for the next request; cached while it is valid. */
  current(): Promise<Credential>;
  /** The server answered 401 to `used`: the next current() fetches a new one if it can. */
  rejected(used: Credential): void;
  /** How many times a new credential was obtained after the first (expiry, 401, a rewritten file). */
  readonly refreshes: number;
}

export const sameCredential = (a: Credential, b: Credential) =>
  a.headers.authorization === b.headers.authorization && a.cert === b.cert && a.key === b.key;

const bearer = (token: string): Credential => ({ headers: { authorization: `Bearer ${token}` } });

interface ExecConfig {
  command: string;
  args?: string[];
  env?: { name: string; value: string }[] | null;
  apiVersion?: string;
  provideClusterInfo?: boolean;
  interactiveMode?: string;
}

interface ExecCredential {
  apiVersion?: string;
  kind?: string;
  status?: { token?: string; clientCertificateData?: string; clientKeyData?: string; expirationTimestamp?: string };
}

export interface ExecOptions {
  now?: () => number;
  /** The process's environment, which the plug-in inherits (exec.env added on top). */
  env?: Record<string, string | undefined>;
  /** A plug-in that does not answer within this long fails (default 60 s). */
  timeoutMs?: number;
}

const EXEC_API_VERSIONS = ["client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"];

/** Runs the plug-in as client-go does: KUBERNETES_EXEC_INFO in its environment, ExecCredential on stdout. */
async function runExecPlugin(exec: ExecConfig, kc: KubeConfig, o: ExecOptions): Promise<ExecCredential> {
  const apiVersion = exec.apiVersion ?? "";
  if (!EXEC_API_VERSIONS.includes(apiVersion)) {
    throw new KubeConfigError(
      `exec plug-in ${exec.command}: apiVersion "${apiVersion}" is not supported; use one of ${EXEC_API_VERSIONS.join(", ")}`,
    );
  }
  if (exec.interactiveMode === "Always") {
    throw new KubeConfigError(
      `exec plug-in ${exec.command} needs a terminal (interactiveMode: Always); liqo runs without one: use a plug-in mode that needs no input`,
    );
  }
  const spec: Record<string, unknown> = { interactive: false };
  if (exec.provideClusterInfo) {
    const c = kc.getCurrentCluster()!;
    const ca = c.caData ?? (c.caFile ? readFileSync(c.caFile).toString("base64") : undefined);
    spec.cluster = {
      server: c.server,
      "tls-server-name": c.tlsServerName,
      "insecure-skip-tls-verify": c.skipTLSVerify || undefined,
      "certificate-authority-data": ca,
      "proxy-url": c.proxyUrl,
    };
  }
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(o.env ?? process.env)) if (v !== undefined) env[k] = v;
  for (const e of exec.env ?? []) env[e.name] = e.value;
  env.KUBERNETES_EXEC_INFO = JSON.stringify({ apiVersion, kind: "ExecCredential", spec });
  let proc;
  try {
    proc = Bun.spawn([exec.command, ...(exec.args ?? [])], {
      env,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      timeout: o.timeoutMs ?? 60_000,
    });
  } catch (err) {
    throw new KubeConfigError(
      `exec plug-in ${exec.command} cannot be started: ${(err as Error).message}; check users[].user.exec.command in the kubeconfig`,
      { cause: err },
    );
  }
  const [out, errText, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) {
    throw new KubeConfigError(
      `exec plug-in ${exec.command} exited with ${proc.signalCode ?? code}: ${errText.trim().slice(0, 500) || "no output on stderr"}`,
    );
  }
  let cred: ExecCredential;
  try {
    cred = JSON.parse(out);
  } catch (err) {
    throw new KubeConfigError(
      `exec plug-in ${exec.command} did not print an ExecCredential (JSON): ${out.slice(0, 200)}`,
      { cause: err },
    );
  }
  if (cred.kind !== "ExecCredential" || cred.apiVersion !== apiVersion) {
    throw new KubeConfigError(
      `exec plug-in ${exec.command} answered ${cred.apiVersion} ${cred.kind}; the kubeconfig asks for ${apiVersion} ExecCredential`,
    );
  }
  const s = cred.status;
  if (!s?.token && !(s?.clientCertificateData && s.clientKeyData)) {
    throw new KubeConfigError(
      `exec plug-in ${exec.command} returned neither status.token nor status.clientCertificateData and clientKeyData`,
    );
  }
  return cred;
}

/** An exec plug-in: one run at a time, its answer kept until expirationTimestamp or a 401. */
export function execCredentialSource(exec: ExecConfig, kc: KubeConfig, o: ExecOptions = {}): CredentialSource {
  const now = o.now ?? Date.now;
  let cached: { credential: Credential; expires: number } | undefined;
  let running: Promise<Credential> | undefined;
  let runs = 0;
  const run = () => {
    running ??= runExecPlugin(exec, kc, o)
      .then((cred) => {
        const s = cred.status!;
        const credential: Credential = s.token ? bearer(s.token) : { headers: {} };
        if (s.clientCertificateData) Object.assign(credential, { cert: s.clientCertificateData, key: s.clientKeyData });
        // Without a timestamp the credential lasts until the server refuses it, as in client-go.
        const expires = s.expirationTimestamp ? Date.parse(s.expirationTimestamp) : Infinity;
        if (Number.isNaN(expires))
          throw new KubeConfigError(
            `exec plug-in ${exec.command}: expirationTimestamp "${s.expirationTimestamp}" is not an RFC 3339 time`,
          );
        cached = { credential, expires };
        runs++;
        return credential;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };
  return {
    async current() {
      if (cached && now() < cached.expires) return cached.credential;
      return run();
    },
    rejected(used) {
      if (cached && sameCredential(cached.credential, used)) cached = undefined;
    },
    get refreshes() {
      return Math.max(0, runs - 1);
    },
  };
}

/** A token file, re-read whenever its inode, size or mtime changes (a stat per request), or after a 401. */
export function tokenFileSource(file: string): CredentialSource {
  let token = "";
  let stamp = "";
  let reads = 0;
  return {
    async current() {
      let st;
      try {
        st = statSync(file);
      } catch (err) {
        // Kept while a writer swaps the file (the kubelet's ..data symlink); fatal only before the first read.
        if (token) return bearer(token);
        throw new KubeConfigError(
          `token file ${file} cannot be read (${(err as Error).message}); fix users[].user.tokenFile in the kubeconfig`,
          { cause: err },
        );
      }
      const next = `${st.ino}:${st.size}:${st.mtimeMs}`;
      if (next !== stamp) {
        const text = readFileSync(file, "utf8").trim();
        if (text) {
          if (token && text !== token) reads++;
          token = text;
          stamp = next;
        } else if (!token) {
          throw new KubeConfigError(`token file ${file} is empty; write the bearer token into it`);
        }
      }
      return bearer(token);
    },
    rejected() {
      stamp = "";
    },
    get refreshes() {
      return reads;
    },
  };
}

/** The pod's ServiceAccount token, which the kubelet rotates (see incluster.ts). */
function inClusterSource(kc: InClusterKubeConfig): CredentialSource {
  let last = "";
  let changes = 0;
  return {
    async current() {
      const token = kc.bearerToken();
      if (last && token !== last) changes++;
      last = token;
      return bearer(token);
    },
    rejected() {},
    get refreshes() {
      return changes;
    },
  };
}

/** A static token or basic auth, or another auth provider (OIDC, cloud), which caches on its own. */
function kubeconfigSource(kc: KubeConfig, user: User | null): CredentialSource {
  return {
    async current() {
      if (user?.token) return bearer(user.token);
      if (user?.username || user?.password) {
        return {
          headers: {
            authorization: `Basic ${Buffer.from(`${user.username ?? ""}:${user.password ?? ""}`).toString("base64")}`,
          },
        };
      }
      if (!user?.authProvider) return { headers: {} };
      const auth = await kc.authProviderHeader();
      return { headers: auth ? { authorization: auth } : {} };
    },
    rejected() {},
    refreshes: 0,
  };
}

export interface CredentialOptions extends ExecOptions {
  /** kubectl's users[].user.tokenFile (client-node does not read it); wins over a static token, as in client-go. */
  tokenFile?: string;
}

/** The source for the kubeconfig's current user. */
export function credentialSource(kc: KubeConfig, o: CredentialOptions = {}): CredentialSource {
  if (kc instanceof InClusterKubeConfig) return inClusterSource(kc);
  const user = kc.getCurrentUser();
  const exec = user?.exec as ExecConfig | undefined;
  if (exec) {
    if (!exec.command)
      throw new KubeConfigError(
        `user ${user?.name}: exec has no command; set users[].user.exec.command in the kubeconfig`,
      );
    return execCredentialSource(exec, kc, o);
  }
  if (o.tokenFile) return tokenFileSource(o.tokenFile);
  return kubeconfigSource(kc, user);
}
