import { defineCommand } from "citty";
import { liqoVersion } from "../version.ts";

export default defineCommand({
  meta: { name: "version", description: "Print the liqoctl version" },
  args: {
    output: { type: "string", alias: "o", description: "output format: text (default) or json" },
  },
  run({ args }) {
    const info = { client: { version: liqoVersion, runtime: `bun ${Bun.version}`, platform: `${process.platform}/${process.arch}` } };
    if (args.output === "json") console.log(JSON.stringify(info, null, 2));
    else console.log(`Client version: ${info.client.version} (${info.client.runtime}, ${info.client.platform})`);
  },
});
