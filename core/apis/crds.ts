// Installing the CRDs: server-side apply of every manifest, then waiting until the API server
// serves each one, so a controller started right after never sees "no matches for kind".
import type { KubeClient } from "../kube/client.ts";
import { KubeApiError } from "../kube/errors.ts";
import { Resources } from "../kube/resources.ts";
import type { CustomResourceDefinition } from "./define.ts";
import { allKinds } from "./kinds.ts";

export const allCrds: readonly CustomResourceDefinition[] = allKinds.map((k) => k.crd);

export const CRD_FIELD_MANAGER = "liqo";

/** A CRD that could not be applied or did not become Established in time. */
export class CrdInstallError extends Error {
  override name = "CrdInstallError";
  constructor(
    readonly crd: string,
    readonly reason: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface InstallCrdsOptions {
  crds?: readonly CustomResourceDefinition[];
  /** How long to wait for all CRDs to be Established. */
  timeoutMs?: number;
  pollMs?: number;
  fieldManager?: string;
}

interface CrdCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
type CrdWithStatus = CustomResourceDefinition & { status?: { conditions?: CrdCondition[] } };

function condition(crd: CrdWithStatus, type: string): CrdCondition | undefined {
  return crd.status?.conditions?.find((c) => c.type === type);
}

async function applyOne(client: KubeClient, crd: CustomResourceDefinition, fieldManager: string): Promise<void> {
  try {
    await client.apply(Resources.customResourceDefinitions, crd, { fieldManager, force: true });
  } catch (err) {
    const detail = err instanceof KubeApiError ? `${err.message}` : String(err);
    const hint =
      err instanceof KubeApiError && err.status === 403
        ? "; installing CRDs needs cluster-admin rights (create/patch customresourcedefinitions)"
        : "";
    throw new CrdInstallError(
      crd.metadata.name,
      err instanceof KubeApiError ? err.reason : "ApplyFailed",
      `cannot apply CRD ${crd.metadata.name}: ${detail}${hint}`,
      { cause: err },
    );
  }
}

/** Waits until one CRD is Established; fails early when its names are refused. */
async function waitEstablished(client: KubeClient, name: string, deadline: number, pollMs: number): Promise<void> {
  let last: CrdWithStatus | undefined;
  let lastError: unknown;
  while (true) {
    try {
      last = await client.get<CrdWithStatus>(Resources.customResourceDefinitions, name);
      lastError = undefined;
      if (condition(last, "Established")?.status === "True") return;
      const names = condition(last, "NamesAccepted");
      if (names?.status === "False") {
        throw new CrdInstallError(
          name,
          names.reason ?? "NamesNotAccepted",
          `CRD ${name} was not accepted: ${names.message ?? names.reason}; another CRD already uses these names, remove it or rename`,
        );
      }
    } catch (err) {
      if (err instanceof CrdInstallError) throw err;
      lastError = err;
    }
    if (Date.now() >= deadline) {
      const est = last && condition(last, "Established");
      const why = lastError
        ? `last error: ${(lastError as Error).message}`
        : est
          ? `Established=${est.status} (${est.reason ?? ""}: ${est.message ?? ""})`
          : "no Established condition yet";
      throw new CrdInstallError(
        name,
        "Timeout",
        `CRD ${name} did not become Established in time; ${why}; check the API server's logs`,
      );
    }
    await Bun.sleep(pollMs);
  }
}

/**
 * Applies every CRD (server-side apply, field manager "liqo") and waits until each is
 * Established. Idempotent. Throws CrdInstallError naming the first CRD that failed and why.
 */
export async function installCrds(client: KubeClient, options: InstallCrdsOptions = {}): Promise<string[]> {
  const crds = options.crds ?? allCrds;
  const fieldManager = options.fieldManager ?? CRD_FIELD_MANAGER;
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const pollMs = options.pollMs ?? 100;
  await Promise.all(crds.map((crd) => applyOne(client, crd, fieldManager)));
  await Promise.all(crds.map((crd) => waitEstablished(client, crd.metadata.name, deadline, pollMs)));
  // Kinds just added are unknown to discovery results cached before.
  client.resetDiscovery();
  return crds.map((c) => c.metadata.name);
}
