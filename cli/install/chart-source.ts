// Where the chart liqoctl installs comes from. From a checkout: the repository's chart/ directory.
// A compiled liqoctl embeds the chart instead (scripts/build-liqoctl.ts swaps this module for one
// that writes the embedded files to a temporary directory), so the binary installs on its own.
import { resolve } from "node:path";

export interface ChartSource {
  dir: string;
  embedded: boolean;
  cleanup(): void;
}

export async function bundledChart(): Promise<ChartSource> {
  return { dir: resolve(import.meta.dir, "../../chart"), embedded: false, cleanup() {} };
}
