export { createKubeletApi, parseRoute, type KubeletApi, type KubeletApiOptions } from "./server.ts";
export { KubeletApiError, type PodResolver, type RemotePodRef } from "./types.ts";
