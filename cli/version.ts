// The version liqoctl and every `liqo` role report; the build may override it through the environment.
import pkg from "../package.json" with { type: "json" };

export const liqoVersion: string = pkg.version;

export interface ClientVersion {
  version: string;
  runtime: string;
  platform: string;
}

export function clientVersion(): ClientVersion {
  return { version: liqoVersion, runtime: `bun ${Bun.version}`, platform: `${process.platform}/${process.arch}` };
}

/** `liqoctl version --client` output: one line of text, or the JSON document (output "json"). */
export function clientVersionOutput(output: "text" | "json"): string {
  const client = clientVersion();
  return output === "json"
    ? JSON.stringify({ client }, null, 2)
    : `Client version: ${client.version} (${client.runtime}, ${client.platform})`;
}

/**
 * The output format when argv is exactly `version --client` with an optional valid --output/-o,
 * else undefined. liqoctl answers these without loading citty: the CLI framework is most of the
 * start-up cost of a compiled liqoctl (measured in tests/bench/liqoctl.ts), and anything else
 * (--help, a typo, a bad --output) still goes through citty for the usual messages.
 */
export function clientVersionFastPath(argv: string[]): "text" | "json" | undefined {
  if (argv[0] !== "version" || !argv.includes("--client")) return undefined;
  let output: string = "text";
  const rest = argv.slice(1).filter((a) => a !== "--client");
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    const eq = a.match(/^(?:--output|-o)=(.*)$/);
    if (eq) output = eq[1]!;
    else if ((a === "--output" || a === "-o") && i + 1 < rest.length) output = rest[++i]!;
    else return undefined;
  }
  return output === "text" || output === "json" ? output : undefined;
}
