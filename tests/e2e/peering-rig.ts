// Liqo's peering parts on a rig cluster, in the test process: the authentication service (own
// serving certificate, fixed port so it can be stopped and started again), the ForeignCluster
// controller (consumer) with in-process virtual kubelets, and the ResourceRequest controller
// (provider). liqoctl runs as a real subprocess against them. startConsumerProcesses runs a
// consumer's liqo as real `liqo auth` and `liqo controller-manager` processes instead.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { installCrds } from "../../core/apis/index.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { createAuthServer, ensureAuthToken, type AuthServer } from "../../core/peering/auth/index.ts";
import { recordAuthUrl } from "../../core/peering/auth-url.ts";
import { createLogger } from "../../core/log.ts";
import { appendFileSync } from "node:fs";
import {
  createForeignClusterController,
  type ForeignClusterController,
} from "../../core/peering/foreigncluster/index.ts";
import { ensureClusterIdentity, type LocalClusterIdentity } from "../../core/peering/identity.ts";
import { createCrdReplicator } from "../../core/peering/replicator/index.ts";
import { createResourceRequestController } from "../../core/peering/sharing/index.ts";
import { createNamespaceOffloadingController } from "../../core/offloading/index.ts";
import { createShadowPodController } from "../../core/shadowpod/controller.ts";
import { freePort } from "../rig/ports.ts";
import { serverExt, sign } from "../rig/pki.ts";
import { loadRig } from "../rig/rig.ts";
import { startRole } from "../quickstart/roles.ts";
import type { TestRig } from "../rig/testing.ts";

export interface LiqoSide {
  name: string;
  client: KubeClient;
  kubeconfig: string;
  identity: LocalClusterIdentity;
  authUrl: string;
  fc: ForeignClusterController;
  /** Stops the authentication service (peers then see it unreachable). */
  stopAuth(): Promise<void>;
  startAuth(): Promise<void>;
  /**
   * Stops the provider's ResourceRequest controller (no offer is made meanwhile) and starts a fresh
   * one: how tests hold a negotiation between authentication and the offer.
   */
  pauseOffers(): Promise<void>;
  resumeOffers(): Promise<void>;
  /**
   * Stops the ForeignCluster controller (its virtual kubelets stop, their Nodes stay, as when the
   * controller manager's pod dies) and starts a fresh one, which adopts them.
   */
  restartConsumer(meanwhile?: () => Promise<void>): Promise<void>;
  /** Stops the ShadowPod controller and starts a fresh one (its quota ledger recounted from the cluster). */
  restartShadowPods(meanwhile?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

export interface LiqoSideOptions {
  /**
   * Which side's controllers run (default both): a pure provider needs no ForeignCluster or
   * namespace-offloading controller, which saves CPU when a rig holds many providers.
   */
  consumer?: boolean;
  provider?: boolean;
}

export async function startLiqoSide(
  rig: TestRig,
  name: string,
  labels: Record<string, string> = {},
  options: LiqoSideOptions = {},
): Promise<LiqoSide> {
  const cluster = rig.clusters.find((c) => c.name === name)!;
  const client = rig.client(name);
  const dir = join(rig.dir, `liqo-${name}`);
  mkdirSync(dir, { recursive: true });
  await installCrds(client);
  const identity = await ensureClusterIdentity(client, { clusterName: name, clusterLabels: labels });
  await ensureAuthToken(client);
  const serving = sign(dir, cluster.pki.ca, "auth", `/CN=liqo-auth-${name}`, serverExt(["IP:127.0.0.1"]));
  const kubelet = sign(dir, cluster.pki.ca, "kubelet", `/CN=liqo-virtual-kubelet-${name}`, serverExt(["IP:127.0.0.1"]));
  const port = await freePort();
  const authUrl = `https://127.0.0.1:${port}`;
  let auth: AuthServer | undefined;
  const startAuth = async () => {
    auth = await createAuthServer({
      client,
      clusterIdentity: identity,
      apiServerUrl: cluster.server,
      apiServerCa: readFileSync(cluster.pki.ca.cert, "utf8"),
      tls: serving,
      host: "127.0.0.1",
      port,
    });
  };
  await startAuth();
  await recordAuthUrl(client, "liqo", authUrl);
  // The controllers' logs, for a failing test: <rig dir>/liqo-<name>/controllers.log.
  const logger = createLogger(
    { cluster: name },
    { write: (line) => appendFileSync(join(dir, "controllers.log"), line + "\n") },
  );
  const newFc = () =>
    createForeignClusterController({
      client,
      localCluster: identity,
      authUrl,
      resyncMs: 5000,
      logger,
      kubelet: {
        host: "127.0.0.1",
        tls: { cert: readFileSync(kubelet.cert, "utf8"), key: readFileSync(kubelet.key, "utf8") },
        clientCA: readFileSync(cluster.pki.ca.cert, "utf8"),
      },
      replicator: (o) => {
        const r = createCrdReplicator(o);
        return {
          start: () => {
            r.start().catch(() => {});
          },
          stop: () => r.stop(),
        };
      },
    });
  let fc = newFc();
  const consumer = options.consumer ?? true;
  const provider = options.provider ?? true;
  const newRr = () =>
    createResourceRequestController({ client, clusterIdentity: identity, revokeGraceMs: 500, logger });
  let rr = provider ? newRr() : undefined;
  // Namespace offloading (consumer side) and ShadowPods (provider side), as the controller manager runs them.
  const offloading = consumer
    ? createNamespaceOffloadingController({
        client,
        localCluster: { clusterID: identity.clusterId, clusterName: name },
        logger,
      })
    : undefined;
  const newShadowPods = () => createShadowPodController({ client, logger });
  let shadowPods = provider ? newShadowPods() : undefined;
  if (consumer) await fc.start();
  await rr?.start();
  await offloading?.start();
  await shadowPods?.start();
  return {
    name,
    client,
    kubeconfig: cluster.kubeconfig,
    identity,
    authUrl,
    get fc() {
      return fc;
    },
    stopAuth: async () => {
      await auth?.stop();
      auth = undefined;
    },
    startAuth,
    async pauseOffers() {
      await rr?.stop();
      rr = undefined;
    },
    async resumeOffers() {
      if (!rr) {
        rr = newRr();
        await rr.start();
      }
    },
    async restartConsumer(meanwhile) {
      await fc.stop();
      await meanwhile?.();
      fc = newFc();
      await fc.start();
    },
    async restartShadowPods(meanwhile) {
      await shadowPods?.stop();
      await meanwhile?.();
      shadowPods = newShadowPods();
      await shadowPods.start();
    },
    async stop() {
      if (consumer) await fc.stop();
      await rr?.stop();
      await offloading?.stop();
      await shadowPods?.stop();
      await auth?.stop();
    },
  };
}

const liqoctlPath = join(import.meta.dir, "../../cli/main.ts");

export async function liqoctl(
  side: { kubeconfig: string },
  ...args: string[]
): Promise<{ code: number; out: string; err: string }> {
  const proc = Bun.spawn([process.execPath, liqoctlPath, ...args, `--kubeconfig=${side.kubeconfig}`], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code: await proc.exited, out, err };
}

/** `liqoctl generate peer-command --only-command` on the provider, as argv for the consumer. */
export async function generatedPeerCommand(provider: LiqoSide): Promise<string[]> {
  const r = await liqoctl(provider, "generate", "peer-command", "--only-command");
  if (r.code !== 0) throw new Error(`liqoctl generate peer-command failed (${r.code}): ${r.err}`);
  const words = r.out.trim().split(/\s+/);
  if (words[0] !== "liqoctl") throw new Error(`unexpected generated command: ${r.out}`);
  // These rigs run liqo's roles as processes without a network fabric.
  return [...words.slice(1), "--no-networking"];
}

/** A consumer whose liqo runs as real processes (see startConsumerProcesses). */
export interface ConsumerProcesses {
  name: string;
  client: KubeClient;
  kubeconfig: string;
  identity: LocalClusterIdentity;
  /** The controller manager's admin API (http://127.0.0.1:port): /metrics, /readyz, views. */
  admin: string;
  /** The controller manager's process ID, for its RSS. */
  pid: number;
}

/**
 * `liqo auth` and `liqo controller-manager` (foreigncluster and namespaceoffloading controllers) as
 * processes, as a developer runs them outside the cluster: every virtual kubelet of the cluster's
 * peerings then lives in that one process. Both are recorded in the rig, so rig.down() stops them;
 * logs in <rig dir>/logs/<name>-*.log. The auth service's URL goes into the ResourceRequests, so
 * providers can record the consumer on their side (IncomingPeering).
 */
export async function startConsumerProcesses(rig: TestRig, name: string): Promise<ConsumerProcesses> {
  const c = rig.clusters.find((x) => x.name === name)!;
  const client = rig.client(name);
  await installCrds(client);
  const identity = await ensureClusterIdentity(client, { clusterName: name });
  const certs = join(rig.dir, `${name}-certs`);
  mkdirSync(certs, { recursive: true });
  const san = serverExt(["IP:127.0.0.1"]);
  const kubelet = sign(certs, c.pki.ca, "virtual-kubelet", `/CN=liqo-virtual-kubelet-${name}`, san);
  const authCert = sign(certs, c.pki.ca, "auth", `/CN=liqo-auth-${name}`, san);
  const authUrl = `https://127.0.0.1:${await freePort()}`;
  await startRole(rig, `${name}/auth`, [
    "auth",
    `--kubeconfig=${c.kubeconfig}`,
    `--tls-cert-file=${authCert.cert}`,
    `--tls-key-file=${authCert.key}`,
    `--address=${authUrl.slice("https://".length)}`,
    `--advertise-url=${authUrl}`,
  ]);
  const { admin } = await startRole(rig, `${name}/controller-manager`, [
    "controller-manager",
    `--kubeconfig=${c.kubeconfig}`,
    `--cluster-id=${identity.clusterId}`,
    `--cluster-name=${name}`,
    "--controllers=foreigncluster,namespaceoffloading",
    `--auth-url=${authUrl}`,
    "--kubelet-address=127.0.0.1",
    `--kubelet-cert-file=${kubelet.cert}`,
    `--kubelet-key-file=${kubelet.key}`,
    `--kubelet-client-ca-file=${c.pki.ca.cert}`,
  ]);
  const pid = loadRig(rig.dir)!.extras!.find((p) => p.name === `${name}/controller-manager`)!.pid;
  return { name, client, kubeconfig: c.kubeconfig, identity, admin, pid };
}
