// Twin namespaces in a remote cluster: created with marks of ownership (the origin cluster's ID
// as a label, the NamespaceMap as an annotation), never adopted when someone else made them, and
// deleted only when ours, with a UID precondition.
import {
  MappingPhase,
  REMOTE_CLUSTER_ID_LABEL,
  REMOTE_NAMESPACE_MANAGED_BY_ANNOTATION,
  REMOTE_NAMESPACE_ORIGINAL_NAME_ANNOTATION,
} from "../apis/index.ts";
import { KubeApiError } from "../kube/errors.ts";
import type { KubeClient } from "../kube/client.ts";
import { Resources, type KubeObject } from "../kube/resources.ts";

export interface RemoteNamespaces {
  /** The phase to report for the twin, and why when it is not Accepted; undefined phase: not there yet. */
  ensure(
    remoteNamespace: string,
    localNamespace: string,
    previousPhase?: string,
  ): Promise<{ phase?: string; problem?: string; transient?: boolean }>;
  /** True once the twin is gone (or is not ours, so not ours to delete). */
  remove(remoteNamespace: string): Promise<boolean>;
}

/** A KubeApiError worth retrying as is: no answer, or the server's own trouble. */
export const isTransient = (err: unknown) =>
  err instanceof KubeApiError && (err.status === 0 || err.status >= 500 || err.status === 429);

export function createRemoteNamespaces(options: {
  remote: KubeClient;
  localClusterId: string;
  remoteClusterName: string;
  namespaceMapKey: string;
}): RemoteNamespaces {
  const { remote, localClusterId, namespaceMapKey } = options;
  const owned = (ns: KubeObject) =>
    ns.metadata.annotations?.[REMOTE_NAMESPACE_MANAGED_BY_ANNOTATION] === namespaceMapKey &&
    ns.metadata.labels?.[REMOTE_CLUSTER_ID_LABEL] === localClusterId;

  async function ensure(remoteNamespace: string, localNamespace: string, previousPhase?: string) {
    let ns: KubeObject | undefined;
    try {
      ns = await remote.find(Resources.namespaces, remoteNamespace);
      if (!ns) {
        ns = await remote
          .create(Resources.namespaces, {
            apiVersion: "v1",
            kind: "Namespace",
            metadata: {
              name: remoteNamespace,
              labels: { [REMOTE_CLUSTER_ID_LABEL]: localClusterId },
              annotations: {
                [REMOTE_NAMESPACE_MANAGED_BY_ANNOTATION]: namespaceMapKey,
                [REMOTE_NAMESPACE_ORIGINAL_NAME_ANNOTATION]: localNamespace,
              },
            },
          })
          .catch(async (err) => {
            // Created by someone else between our read and our write: judge that one below.
            if (err instanceof KubeApiError && err.status === 409)
              return remote.get(Resources.namespaces, remoteNamespace);
            throw err;
          });
      }
    } catch (err) {
      const transient = isTransient(err);
      // A blip does not turn a working twin into a failure; anything else is reported.
      const phase =
        transient && previousPhase === MappingPhase.Accepted ? MappingPhase.Accepted : MappingPhase.CreationLoopBackOff;
      return {
        phase,
        transient,
        problem: `could not create namespace ${remoteNamespace} in cluster ${options.remoteClusterName}: ${(err as Error).message}`,
      };
    }
    if (!owned(ns)) {
      return {
        phase: MappingPhase.CreationLoopBackOff,
        problem:
          `namespace ${remoteNamespace} already exists in cluster ${options.remoteClusterName} and was not created by Liqo for this cluster, ` +
          `so it is left alone; delete or rename it there, or offload ${localNamespace} with namespaceMappingStrategy DefaultName`,
      };
    }
    // Ours but on its way out (for instance just deselected and reselected): recreate once it is gone.
    if (ns.metadata.deletionTimestamp)
      return { phase: undefined, transient: true, problem: `namespace ${remoteNamespace} is still terminating` };
    return { phase: MappingPhase.Accepted };
  }

  async function remove(remoteNamespace: string) {
    const ns = await remote.find(Resources.namespaces, remoteNamespace);
    if (!ns || !owned(ns)) return true;
    if (ns.metadata.deletionTimestamp) return false;
    // The UID precondition makes sure a namespace recreated by someone else meanwhile survives.
    await remote.delete(Resources.namespaces, remoteNamespace, undefined, { uid: ns.metadata.uid });
    return false;
  }

  return { ensure, remove };
}
