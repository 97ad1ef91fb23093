// Each rig cluster's PKI, made with openssl: a CA, serving certificates, client certificates and
// the service-account signing key. EC P-256 keys: as good as RSA here and much faster to make.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RigError } from "./errors.ts";

export interface CertPair {
  cert: string;
  key: string;
}
export interface ClusterPki {
  dir: string;
  ca: CertPair;
  apiserver: CertPair;
  kubeletClient: CertPair;
  admin: CertPair;
  controllerManager: CertPair;
  scheduler: CertPair;
  kwok: CertPair;
  kwokServing: CertPair;
  serviceAccount: { key: string; pub: string };
}

function openssl(args: string[], cwd: string, input?: string) {
  const res = Bun.spawnSync(["openssl", ...args], {
    cwd,
    stdin: input ? Buffer.from(input) : undefined,
    stderr: "pipe",
    stdout: "pipe",
  });
  if (res.exitCode !== 0) {
    throw new RigError(
      `openssl ${args[0]} failed in ${cwd}: ${res.stderr.toString().trim()} (is openssl installed? apt-get install openssl)`,
    );
  }
  return res.stdout.toString();
}

function key(dir: string, name: string): string {
  const path = join(dir, `${name}.key`);
  openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path], dir);
  return path;
}

export function sign(dir: string, ca: CertPair, name: string, subject: string, ext: string): CertPair {
  const keyPath = key(dir, name);
  const csr = join(dir, `${name}.csr`);
  const extFile = join(dir, `${name}.ext`);
  writeFileSync(extFile, ext);
  openssl(["req", "-new", "-key", keyPath, "-subj", subject, "-out", csr], dir);
  const cert = join(dir, `${name}.crt`);
  openssl(
    [
      "x509",
      "-req",
      "-in",
      csr,
      "-CA",
      ca.cert,
      "-CAkey",
      ca.key,
      "-CAcreateserial",
      "-days",
      "3650",
      "-sha256",
      "-extfile",
      extFile,
      "-out",
      cert,
    ],
    dir,
  );
  return { cert, key: keyPath };
}

/** A CA: name.key and name.crt in dir, with the given subject (tests make throwaway ones with it). */
export function createCa(dir: string, name: string, subject: string): CertPair {
  const caKey = key(dir, name);
  const caCert = join(dir, `${name}.crt`);
  openssl(
    [
      "req",
      "-x509",
      "-new",
      "-key",
      caKey,
      "-subj",
      subject,
      "-days",
      "3650",
      "-sha256",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
      "-out",
      caCert,
    ],
    dir,
  );
  return { cert: caCert, key: caKey };
}

const client =
  "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n";
export const serverExt = (sans: string[]) =>
  `basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=${sans.join(",")}\n`;

export function createClusterPki(
  dir: string,
  clusterName: string,
  serviceIp: string,
  extraIps: string[] = [],
): ClusterPki {
  mkdirSync(dir, { recursive: true });
  const ca = createCa(dir, "ca", `/CN=rig-${clusterName}-ca`);
  const apiserverSans = [
    "IP:127.0.0.1",
    `IP:${serviceIp}`,
    ...extraIps.map((ip) => `IP:${ip}`),
    "DNS:localhost",
    "DNS:kubernetes",
    "DNS:kubernetes.default",
    "DNS:kubernetes.default.svc",
    "DNS:kubernetes.default.svc.cluster.local",
  ];
  const saKey = key(dir, "sa");
  const saPub = join(dir, "sa.pub");
  openssl(["pkey", "-in", saKey, "-pubout", "-out", saPub], dir);
  return {
    dir,
    ca,
    apiserver: sign(dir, ca, "apiserver", "/CN=kube-apiserver", serverExt(apiserverSans)),
    kubeletClient: sign(
      dir,
      ca,
      "apiserver-kubelet-client",
      "/O=system:masters/CN=kube-apiserver-kubelet-client",
      client,
    ),
    admin: sign(dir, ca, "admin", "/O=system:masters/CN=rig-admin", client),
    controllerManager: sign(dir, ca, "controller-manager", "/CN=system:kube-controller-manager", client),
    scheduler: sign(dir, ca, "scheduler", "/CN=system:kube-scheduler", client),
    kwok: sign(dir, ca, "kwok", "/O=system:masters/CN=kwok", client),
    kwokServing: sign(dir, ca, "kwok-serving", "/CN=kwok", serverExt(["IP:127.0.0.1", "DNS:localhost"])),
    serviceAccount: { key: saKey, pub: saPub },
  };
}

const b64 = (path: string) => readFileSync(path).toString("base64");

/** A self-contained kubeconfig (certificates embedded), so it works when copied anywhere. */
export function kubeconfigYaml(
  clusterName: string,
  server: string,
  caCert: string,
  user: CertPair,
  userName = "admin",
): string {
  const ctx = clusterName;
  return [
    "apiVersion: v1",
    "kind: Config",
    "clusters:",
    `- name: ${clusterName}`,
    "  cluster:",
    `    server: ${server}`,
    `    certificate-authority-data: ${b64(caCert)}`,
    "users:",
    `- name: ${clusterName}-${userName}`,
    "  user:",
    `    client-certificate-data: ${b64(user.cert)}`,
    `    client-key-data: ${b64(user.key)}`,
    "contexts:",
    `- name: ${ctx}`,
    "  context:",
    `    cluster: ${clusterName}`,
    `    user: ${clusterName}-${userName}`,
    `current-context: ${ctx}`,
    "",
  ].join("\n");
}
