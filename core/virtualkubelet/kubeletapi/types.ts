// Shared shapes of the kubelet API.

/** Where a local pod (bound to the virtual node) runs in the remote cluster. */
export interface RemotePodRef {
  remoteNamespace: string;
  remoteName: string;
}

/** Maps a local pod to its remote twin; undefined when this virtual node does not run it. */
export type PodResolver = (
  namespace: string,
  name: string,
) => RemotePodRef | undefined | Promise<RemotePodRef | undefined>;

/** The kubelet API's kinds of failure, with the HTTP status each answers with. */
export class KubeletApiError extends Error {
  override name = "KubeletApiError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}
