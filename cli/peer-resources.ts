// liqoctl peer's asked amounts: --cpu, --memory, --pods (Liqo 1.x's flags) and --resource
// name=quantity (repeatable) for the rest, checked before anything is written; the result goes
// to the ForeignCluster's spec.requestedResources, which the ResourceRequest carries.
import { mustParseResourceAmounts, parseResourceFlag } from "../core/peering/sharing/resources.ts";
import { CliError } from "./errors.ts";
import { repeatedFlag } from "./ui.ts";

export const askFlags = {
  cpu: {
    type: "string",
    description: "ask the provider for this much cpu (e.g. 2 or 500m); it grants at most its offer",
  },
  memory: { type: "string", description: "ask the provider for this much memory (e.g. 4Gi)" },
  pods: { type: "string", description: "ask the provider for this many pods (e.g. 20)" },
  resource: {
    type: "string",
    description: "ask for another resource, name=quantity (e.g. nvidia.com/gpu=1, ephemeral-storage=10Gi); repeatable",
  },
} as const;

/** The asked amounts, or undefined when none was given; a bad one fails naming its flag and the fix. */
export function askedResources(
  args: { cpu?: string; memory?: string; pods?: string },
  rawArgs: string[],
): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  try {
    for (const r of ["cpu", "memory", "pods"] as const) {
      const value = args[r];
      if (value === undefined) continue;
      mustParseResourceAmounts({ [r]: value.trim() }, `--${r}`, () => `--${r}`);
      out[r] = value.trim();
    }
    for (const text of repeatedFlag(rawArgs, "resource")) {
      const [name, value] = parseResourceFlag(text);
      if (name in out) throw new Error(`--resource ${text}: ${name} is asked for twice; give it once`);
      out[name] = value;
    }
  } catch (err) {
    throw new CliError((err as Error).message);
  }
  return Object.keys(out).length ? out : undefined;
}

/**
 * The merge patch of spec.requestedResources that makes it `asked`: keys asked before and not now
 * are removed (a merge patch keeps keys it does not name). Nothing asked: no change.
 */
export function requestedPatch(
  before: Record<string, unknown> | undefined,
  asked: Record<string, string> | undefined,
): { requestedResources?: Record<string, string | null> } {
  if (!asked) return {};
  return { requestedResources: { ...Object.fromEntries(Object.keys(before ?? {}).map((k) => [k, null])), ...asked } };
}
