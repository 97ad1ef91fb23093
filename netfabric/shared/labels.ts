// The names the network manager, the gateway and the overlay agree on: labels and keys of the
// objects one writes and another reads (TunnelEndpoints, NatMappings, the key Secret, the Service).
import type { KubeObject } from "../../core/kube/resources.ts";

/** Liqo's label on TunnelEndpoints and NatMappings (pkg/consts ClusterIDLabelName). */
export const CLUSTER_ID_LABEL = "clusterID";
/** Liqo's WireGuard backend: driver name and backend_config keys (pkg/consts/wireguard.go). */
export const WIREGUARD_BACKEND = "wireguard";
export const PUBLIC_KEY_FIELD = "publicKey";
export const PORT_FIELD = "port";
/** The gateway's key Secret: label net.liqo.io/key=wireguard, data publicKey (pkg/consts KeysLabel). */
export const KEYS_LABEL = "net.liqo.io/key";
/** ip:port where peers reach the gateway, written by the gateway leader on the key Secret. */
export const ENDPOINT_ANNOTATION = "net.liqo.io/gateway-endpoint";
/** The gateway's Service: peers reach the gateway through it, the overlay finds the gateway by it. */
export const GATEWAY_SERVICE_NAME = "liqo-gateway";

/** The gateway's public endpoint, as written on the key Secret. */
export function endpointOf(secret: KubeObject): string | undefined {
  return secret.metadata.annotations?.[ENDPOINT_ANNOTATION];
}
