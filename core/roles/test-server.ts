// `liqo test-server`: the server pods of `liqoctl test network` (netfabric/selftest/server.ts), run
// from the liqo image, so a cluster that can run liqo can run the network test. Not a chart role.
import { hostname } from "node:os";
import { defineCommand } from "citty";
import { CliError } from "../cli-errors.ts";
import { BULK_BYTES, BULK_PORT } from "../../netfabric/selftest/probes.ts";
import { startTestServer } from "../../netfabric/selftest/server.ts";
import { untilSignal } from "./shared.ts";

function port(value: string, flag: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new CliError(`--${flag}: a port from 1 to 65535, got ${value}`);
  return n;
}

export default defineCommand({
  meta: {
    name: "test-server",
    description:
      "the server of liqoctl test network: an HTTP page naming this pod, and random bytes to each TCP connection on a second port",
  },
  args: {
    "http-port": { type: "string", default: "80", description: "port of the page (Server name: <host name>)" },
    "bulk-port": {
      type: "string",
      default: String(BULK_PORT),
      description: "port that sends --bulk-bytes, then closes",
    },
    "bulk-bytes": { type: "string", default: String(BULK_BYTES), description: "bytes sent to each bulk connection" },
  },
  async run({ args }) {
    const bytes = Number(args["bulk-bytes"]);
    if (!Number.isInteger(bytes) || bytes < 1 || bytes > 1 << 30)
      throw new CliError(`--bulk-bytes: a whole number of bytes from 1 to 1 GiB, got ${args["bulk-bytes"]}`);
    const server = await startTestServer({
      name: hostname(),
      httpPort: port(args["http-port"], "http-port"),
      bulkPort: port(args["bulk-port"], "bulk-port"),
      bulkBytes: bytes,
    }).catch((err: Error) => {
      throw new CliError(`test-server: cannot listen: ${err.message}`);
    });
    console.log(`test-server: page on :${server.httpPort}, ${bytes} bytes per connection on :${server.bulkPort}`);
    await untilSignal();
    await server.stop();
  },
});
