// The server side of `liqoctl test network`, run by the liqo image itself (`liqo test-server`), so
// the test needs no image but the one liqo is installed from: an HTTP page naming the pod (what the
// probes' http checks look for) and, on a second port, BULK_BYTES of random data to each TCP
// connection, then a close (the probes' bulk checks).
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:net";
import { BULK_BYTES, BULK_PORT } from "./probes.ts";

export interface TestServerOptions {
  /** What the page says after "Server name: " (the pod's name: its host name in a pod). */
  name: string;
  httpPort?: number;
  bulkPort?: number;
  bulkBytes?: number;
  hostname?: string;
}

export interface TestServer {
  httpPort: number;
  bulkPort: number;
  stop(): Promise<void>;
}

/** The page the probes' http checks match ("Server name: <pod>"), the line the rig's hello image serves too. */
export const testPage = (name: string) => `Server name: ${name}\n`;

export async function startTestServer(o: TestServerOptions): Promise<TestServer> {
  const page = testPage(o.name);
  const http = Bun.serve({
    hostname: o.hostname ?? "0.0.0.0",
    port: o.httpPort ?? 80,
    fetch: () => new Response(page, { headers: { "content-type": "text/plain" } }),
  });
  const blob = randomBytes(o.bulkBytes ?? BULK_BYTES);
  // node:net's end(data) waits for the peer to take every byte before closing: no backpressure to handle here.
  const bulk: Server = createServer((socket) => {
    socket.on("error", () => socket.destroy());
    socket.end(blob);
  });
  await new Promise<void>((resolve, reject) => {
    bulk.once("error", reject);
    bulk.listen(o.bulkPort ?? BULK_PORT, o.hostname ?? "0.0.0.0", () => resolve());
  });
  const address = bulk.address();
  return {
    httpPort: http.port ?? 0,
    bulkPort: typeof address === "object" && address ? address.port : 0,
    async stop() {
      await http.stop(true);
      await new Promise<void>((resolve) => bulk.close(() => resolve()));
    },
  };
}
