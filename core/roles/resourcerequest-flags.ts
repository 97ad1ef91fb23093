// The `liqo controller-manager` flags and wiring of the ResourceRequest controller (provider side
// of peering: offers, withdrawal, revocation), kept apart so the role file stays a list of controllers.
import { CliError } from "../cli-errors.ts";
import type { KubeClient } from "../kube/client.ts";
import type { Logger } from "../log.ts";
import type { Registry } from "../metrics/index.ts";
import { readClusterIdentity } from "../peering/identity.ts";
import { createInformer } from "../kube/informer.ts";
import { StorageClassResource } from "../storage/controller.ts";
import { offeredStorageClasses, type StorageClassObject } from "../storage/offer.ts";
import type { StorageConfig } from "./storage-flags.ts";
import {
  createResourceRequestController,
  DEFAULT_SHARING_PERCENTAGE,
  parseSharingPercentage,
  SharingPercentageError,
} from "../peering/sharing/index.ts";

export const resourceRequestArgs = {
  "sharing-percentage": {
    type: "string",
    alias: "resource-sharing-percentage",
    default: String(DEFAULT_SHARING_PERCENTAGE),
    description: "percentage of the cluster's free resources offered to each consumer, 0-100 (resourcerequest)",
  },
} as const;

type Args = { "sharing-percentage"?: string; "liqo-namespace"?: string; "cluster-id": string; "cluster-name": string };

/** Checked before anything starts, so a bad flag exits 2 with the fix. */
export function sharingPercentageFlag(args: Args): number {
  try {
    return parseSharingPercentage(args["sharing-percentage"] ?? String(DEFAULT_SHARING_PERCENTAGE));
  } catch (err) {
    if (err instanceof SharingPercentageError) throw new CliError(err.message);
    throw err;
  }
}

export async function resourceRequestController(
  args: Args,
  o: {
    client: KubeClient;
    registry: Registry;
    logger: Logger;
    storage?: StorageConfig;
    /** --cluster-labels; without it, the labels kept with the cluster identity. */
    clusterLabels?: Record<string, string>;
  },
) {
  const sharingPercentage = sharingPercentageFlag(args);
  // The offer carries this cluster's labels, which live with its identity.
  const identity = await readClusterIdentity(o.client, args["liqo-namespace"] ?? "liqo").catch(() => undefined);
  // With storage on, offers name the class peers' claims get here (core/storage/offer.ts).
  const classes =
    o.storage &&
    createInformer<StorageClassObject>({ client: o.client, resource: StorageClassResource, logger: o.logger });
  const realClass = o.storage?.realStorageClass ?? "";
  const controller = createResourceRequestController({
    client: o.client,
    registry: o.registry,
    logger: o.logger,
    sharingPercentage,
    clusterIdentity: {
      clusterId: args["cluster-id"],
      clusterName: args["cluster-name"],
      clusterLabels: o.clusterLabels ?? identity?.clusterLabels ?? {},
    },
    storageClasses: classes ? () => offeredStorageClasses(classes.list(), realClass) : undefined,
  });
  if (!classes) return controller;
  // A class made default, renamed or deleted changes what peers are offered: at once, not at the next resync.
  let offered = "";
  const classesChanged = () => {
    const now = JSON.stringify(offeredStorageClasses(classes.list(), realClass));
    if (now !== offered) controller.requeueAll();
    offered = now;
  };
  classes.on({ add: classesChanged, update: classesChanged, delete: classesChanged });
  return {
    ...controller,
    async start() {
      classes.start();
      await classes.waitForSync();
      await controller.start();
    },
    async stop() {
      await controller.stop();
      await classes.stop();
    },
  };
}
