// The `liqo controller-manager` storage flags (Liqo's names) and the storage controller's wiring:
// the consumer's provisioner of the virtual class, the class the provider offers its peers, and
// what the consumer's virtual kubelets need (core/storage).
import { CliError } from "../cli-errors.ts";
import type { KubeClient } from "../kube/client.ts";
import type { Logger } from "../log.ts";
import { createStorageController } from "../storage/controller.ts";

export const storageArgs = {
  "enable-storage": {
    type: "boolean",
    default: false,
    description:
      "run the storage fabric: the provisioner of the virtual storage class, storage offered to and used from peers",
  },
  "virtual-storage-class-name": {
    type: "string",
    default: "liqo",
    description: "name of the virtual storage class (storage)",
  },
  "real-storage-class-name": {
    type: "string",
    default: "",
    description:
      "class of the real volumes behind the virtual one, here and for peers (default: the cluster's default class)",
  },
  "storage-namespace": {
    type: "string",
    default: "liqo-storage",
    description: "namespace of the real claims behind virtual ones on physical nodes",
  },
} as const;

export interface StorageConfig {
  virtualStorageClass: string;
  realStorageClass: string;
  storageNamespace: string;
}

type Args = {
  "enable-storage"?: boolean;
  "virtual-storage-class-name"?: string;
  "real-storage-class-name"?: string;
  "storage-namespace"?: string;
};

const DNS_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** The storage settings, or undefined when storage is off; a bad name fails at start with the fix. */
export function storageConfig(args: Args): StorageConfig | undefined {
  if (!args["enable-storage"]) return undefined;
  const c = {
    virtualStorageClass: args["virtual-storage-class-name"] ?? "liqo",
    realStorageClass: args["real-storage-class-name"] ?? "",
    storageNamespace: args["storage-namespace"] ?? "liqo-storage",
  };
  for (const [flag, v] of [
    ["virtual-storage-class-name", c.virtualStorageClass],
    ["storage-namespace", c.storageNamespace],
  ] as const) {
    if (!DNS_NAME.test(v))
      throw new CliError(
        `--${flag} ${JSON.stringify(v)} is not a valid Kubernetes name (lowercase letters, digits, '-' and '.')`,
      );
  }
  if (c.realStorageClass && !DNS_NAME.test(c.realStorageClass))
    throw new CliError(
      `--real-storage-class-name ${JSON.stringify(c.realStorageClass)} is not a valid Kubernetes name`,
    );
  if (c.realStorageClass === c.virtualStorageClass)
    throw new CliError(
      `--real-storage-class-name cannot be the virtual class ${c.virtualStorageClass}: name the class of real volumes, or leave it empty for the cluster default`,
    );
  return c;
}

export function storageController(config: StorageConfig, o: { client: KubeClient; logger: Logger }) {
  return createStorageController({ client: o.client, logger: o.logger, ...config });
}
