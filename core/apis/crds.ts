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

/** What migrateStoredVersions did for one CRD. */
export interface StoredVersionMigration {
  crd: string;
  /** The versions objects were stored in before, besides the storage version. */
  from: string[];
  to: string;
  /** Objects written back (each now stored in `to`). */
  rewritten: number;
}

/**
 * After a CRD's storage version changed: every object is written back unchanged, which the API
 * server stores in the new storage version (what kube-storage-version-migrator does), then the CRD's
 * status.storedVersions is set to that version alone, so a later release may stop serving the old
 * one. Nothing to do (undefined) when only the storage version is recorded. An object changed or
 * deleted meanwhile is read again (a write by anyone stores the new version too).
 */
export async function migrateStoredVersions(
  client: KubeClient,
  name: string,
): Promise<StoredVersionMigration | undefined> {
  const crd = await client.get<CustomResourceDefinition & { status?: { storedVersions?: string[] } }>(
    Resources.customResourceDefinitions,
    name,
  );
  const to = crd.spec.versions.find((v) => v.storage)?.name;
  if (!to) throw new Error(`CRD ${name} has no storage version`);
  const stored = crd.status?.storedVersions ?? [];
  const from = stored.filter((v) => v !== to);
  if (!from.length) return undefined;
  const res = {
    group: crd.spec.group,
    version: to,
    kind: crd.spec.names.kind,
    plural: crd.spec.names.plural,
    namespaced: crd.spec.scope === "Namespaced",
  };
  let rewritten = 0;
  let continueToken: string | undefined;
  do {
    const page = await client.list(res, { limit: 500, continue: continueToken });
    for (const item of page.items) {
      for (let attempt = 0; ; attempt++) {
        try {
          const current = attempt === 0 ? item : await client.get(res, item.metadata.name!, item.metadata.namespace);
          await client.replace(res, current);
          rewritten++;
          break;
        } catch (err) {
          if (err instanceof KubeApiError && err.status === 404) break;
          if (err instanceof KubeApiError && err.status === 409 && attempt < 5) continue;
          throw new Error(
            `migrating ${name}: cannot write ${item.metadata.namespace ? `${item.metadata.namespace}/` : ""}${item.metadata.name} back in ${to}: ${(err as Error).message}`,
            { cause: err },
          );
        }
      }
    }
    continueToken = page.metadata.continue || undefined;
  } while (continueToken);
  await client.mergePatch(
    Resources.customResourceDefinitions,
    name,
    undefined,
    { status: { storedVersions: [to] } },
    "status",
  );
  return { crd: name, from, to, rewritten };
}
