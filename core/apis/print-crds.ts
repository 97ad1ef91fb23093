// Prints every CRD as a multi-document YAML stream on stdout, for the Helm chart:
//   bun core/apis/print-crds.ts > chart/crds/liqo-crds.yaml
// JSON is valid YAML, so each document is a JSON object after a `---` separator.
import { allCrds } from "./crds.ts";

export function crdsAsYamlStream(crds = allCrds): string {
  return crds.map((crd) => `---\n${JSON.stringify(crd, null, 2)}\n`).join("");
}

if (import.meta.main) process.stdout.write(crdsAsYamlStream());
