// What a provider offers its peers for their claims (ResourceOffer spec.storageClasses): the
// class configured for real volumes when it exists, else the cluster's default class; never a
// virtual class (a peer's claim must end on real storage here).
import { STORAGE_PROVISIONER } from "../apis/labels.ts";
import type { KubeObject } from "../kube/resources.ts";

const DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class";

export type StorageClassObject = KubeObject & { provisioner?: string };

export function offeredStorageClasses(
  classes: StorageClassObject[],
  realClass: string,
): { storageClassName: string; default: boolean }[] {
  const real = classes.filter((c) => c.provisioner !== STORAGE_PROVISIONER && !c.metadata.deletionTimestamp);
  const chosen = realClass
    ? real.find((c) => c.metadata.name === realClass)
    : real.find((c) => c.metadata.annotations?.[DEFAULT_CLASS] === "true");
  return chosen ? [{ storageClassName: chosen.metadata.name!, default: true }] : [];
}

/** The class a consumer asks for on a provider: the offer's default, else its first. */
export function negotiatedStorageClass(
  offered: { storageClassName: string; default?: boolean }[] | undefined,
): string | undefined {
  if (!offered?.length) return undefined;
  return (offered.find((c) => c.default) ?? offered[0])!.storageClassName;
}

/** What a virtual kubelet needs for storage: on here and offered by the provider, else nothing. */
export function storageFor(
  virtualStorageClass: string | undefined,
  offered: { storageClassName: string; default?: boolean }[] | undefined,
) {
  const storageClass = negotiatedStorageClass(offered);
  return virtualStorageClass && storageClass ? { storageClass, virtualStorageClass } : undefined;
}
