// A stand-in for a cluster's auth service in discovery tests: HTTPS with a throw-away self-signed
// certificate, answering GET /ids with the identity it is given (what discovery checks before it
// writes an address).
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";

export interface FakeAuthService {
  url: string;
  port: number;
  stop(): void;
}

export function startFakeAuthService(o: {
  hostname: string;
  clusterId: string;
  clusterName: string;
  tmpRoot: string;
}): FakeAuthService {
  const dir = mkdtempSync(join(o.tmpRoot, "fake-auth-"));
  const [key, cert] = [join(dir, "key.pem"), join(dir, "cert.pem")];
  const args = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"];
  const proc = Bun.spawnSync(["openssl", ...args, "-subj", `/CN=${o.clusterName}`, "-keyout", key, "-out", cert], {
    stderr: "pipe",
  });
  if (proc.exitCode !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`openssl: ${proc.stderr.toString()}`);
  }
  const server = Bun.serve({
    hostname: o.hostname,
    port: 0,
    tls: { cert: Bun.file(cert), key: Bun.file(key) },
    fetch: () => Response.json({ clusterId: o.clusterId, clusterName: o.clusterName }),
  });
  return {
    url: `https://${o.hostname}:${server.port}`,
    port: server.port!,
    stop: () => {
      server.stop(true);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
