// ForeignCluster (discovery.liqo.io/v1alpha1, cluster-scoped): one per known remote cluster; its
// spec says whether to peer, its status reports each side of the peering as a condition.
import * as v from "valibot";
import { ageColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { conditionFields, oneOf, oneOfWithDefault, optionalText } from "../fields.ts";
import { ClusterIdentitySchema, DISCOVERY_GROUP } from "./identity.ts";

/** Desired state of a peering direction; Auto follows the discovery method's default. */
export const PeeringEnabled = { Auto: "Auto", No: "No", Yes: "Yes" } as const;
export type PeeringEnabled = (typeof PeeringEnabled)[keyof typeof PeeringEnabled];

/** "None" is a placeholder Liqo uses in code; the CRD accepts only No and Yes. */
export const NetworkingEnabled = { No: "No", Yes: "Yes", None: "None" } as const;
export type NetworkingEnabled = (typeof NetworkingEnabled)[keyof typeof NetworkingEnabled];

export const PeeringConditionType = {
  OutgoingPeering: "OutgoingPeering",
  IncomingPeering: "IncomingPeering",
  NetworkStatus: "NetworkStatus",
  AuthenticationStatus: "AuthenticationStatus",
  ProcessForeignClusterStatus: "ProcessForeignClusterStatus",
} as const;
export type PeeringConditionType = (typeof PeeringConditionType)[keyof typeof PeeringConditionType];

export const PeeringConditionStatus = {
  None: "None",
  Pending: "Pending",
  Established: "Established",
  Disconnecting: "Disconnecting",
  /** A token was presented and refused (AuthenticationStatus), or a peering refused by the provider (Outgoing/IncomingPeering: incomingPeeringEnabled No). */
  Denied: "Denied",
  /** Authentication only: the identity was refused with an empty token. */
  EmptyDenied: "EmptyDenied",
  Error: "Error",
  Success: "Success",
} as const;
export type PeeringConditionStatus = (typeof PeeringConditionStatus)[keyof typeof PeeringConditionStatus];

const peeringEnabledValues = ["Auto", "No", "Yes"] as const;

// A quantity of 0 or more ("2", "500m", "4Gi", 3): Kubernetes' quantity without a minus sign.
const NON_NEGATIVE_QUANTITY =
  /^\+?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$/;
const AMOUNT_MESSAGE = "must be a quantity of 0 or more, such as 2, 500m or 4Gi";

/**
 * Named amounts people write (not in Liqo v0.5): resource name → a quantity of 0 or more. The API
 * server refuses a negative or malformed quantity naming the field; the names (cpu, memory, pods,
 * ephemeral-storage, hugepages-<size>, or an extended resource with a domain such as
 * nvidia.com/gpu) are checked by the controller that reads them, which keeps its last answer.
 */
export const resourceAmounts = (description: string) =>
  v.pipe(
    v.record(
      v.string(),
      v.pipe(
        v.union(
          [
            v.pipe(v.string(), v.regex(NON_NEGATIVE_QUANTITY, AMOUNT_MESSAGE)),
            v.pipe(v.number(), v.minValue(0, AMOUNT_MESSAGE)),
          ],
          AMOUNT_MESSAGE,
        ),
        v.metadata({
          openapi: {
            anyOf: [{ type: "integer" }, { type: "string" }],
            minimum: 0,
            pattern: NON_NEGATIVE_QUANTITY.source,
            "x-kubernetes-int-or-string": true,
          },
        }),
      ),
    ),
    v.description(description),
  );

// Liqo's own pattern for the authentication service URL (an https URL with a dotted host or IP).
const AUTH_URL = /https:\/\/(www\.)?[-a-zA-Z0-9@:%._\+~#=]{1,256}\.[a-zA-Z0-9()]{1,6}\b([-a-zA-Z0-9()@:%_\+.~#?&//=]*)/;

export const ForeignClusterSpecSchema = v.object({
  clusterIdentity: v.optional(v.pipe(ClusterIdentitySchema, v.description("The identity of the remote cluster."))),
  outgoingPeeringEnabled: oneOfWithDefault(
    peeringEnabledValues,
    "Auto",
    "Whether to peer towards the remote cluster (use its resources).",
  ),
  incomingPeeringEnabled: oneOfWithDefault(
    peeringEnabledValues,
    "Auto",
    "Whether the remote cluster may peer with this one (use our resources).",
  ),
  networkingEnabled: oneOfWithDefault(
    ["No", "Yes"] as const,
    "Yes",
    "Whether Liqo handles the network interconnection with the remote cluster.",
  ),
  foreignAuthUrl: v.pipe(
    v.string(),
    v.regex(
      AUTH_URL,
      "must be the https URL of the remote authentication service, such as https://auth.milan.example.com:443",
    ),
    v.description("The URL of the remote cluster's authentication service."),
  ),
  foreignProxyUrl: optionalText("The URL of a proxy towards the remote API server, used by the clients towards it."),
  insecureSkipTLSVerify: v.optional(
    v.pipe(v.boolean(), v.description("Whether to skip TLS verification of the remote authentication service.")),
    true,
  ),
  offeredResources: v.optional(
    resourceAmounts(
      "Provider side: fixed amounts offered to this cluster instead of --sharing-percentage of the free resources, " +
        "by resource name (cpu, memory, pods, ephemeral-storage, hugepages-<size>, or an extended resource such as nvidia.com/gpu); " +
        "resources not named here keep the percentage. Changes reach the live ResourceOffer.",
    ),
  ),
  requestedResources: v.optional(
    resourceAmounts(
      "Consumer side: the amounts to ask this provider for (liqoctl peer --cpu, --memory, --pods, --resource), by resource name; " +
        "sent in the ResourceRequest. The provider grants at most what its own rule gives, and says so in the request's status.",
    ),
  ),
  ttl: v.optional(
    v.pipe(
      v.number(),
      v.integer("must be a whole number of seconds"),
      v.minValue(0, "must be 0 or more seconds"),
      v.description("For LAN discovery: seconds without updates after which this ForeignCluster is removed."),
    ),
  ),
});

export const PeeringConditionSchema = v.object({
  type: oneOf(
    [
      "OutgoingPeering",
      "IncomingPeering",
      "NetworkStatus",
      "AuthenticationStatus",
      "ProcessForeignClusterStatus",
    ] as const,
    "The aspect of the peering this condition describes.",
  ),
  status: oneOfWithDefault(
    ["None", "Pending", "Established", "Disconnecting", "Denied", "EmptyDenied", "Error", "Success"] as const,
    "None",
    "The state of that aspect.",
    true,
  ),
  ...conditionFields,
});

export const ForeignClusterStatusSchema = v.object({
  tenantNamespace: v.optional(
    v.pipe(
      v.object({
        local: optionalText("The tenant namespace for this peering in the local cluster."),
        remote: optionalText("The tenant namespace for this peering in the remote cluster."),
      }),
      v.description("The namespaces assigned to this pair of clusters."),
    ),
  ),
  peeringConditions: v.optional(
    v.pipe(v.array(PeeringConditionSchema), v.description("The state of each aspect of the peering.")),
  ),
});

const peeringColumn = (name: string, type: PeeringConditionType) =>
  ({ name, type: "string", jsonPath: `.status.peeringConditions[?(@.type == '${type}')].status` }) as const;

export const ForeignClusterKind = defineKind({
  group: DISCOVERY_GROUP,
  kind: "ForeignCluster",
  plural: "foreignclusters",
  scope: "Cluster",
  categories: ["liqo"],
  description: "A remote cluster known to this one, and the desired and observed state of the peering with it.",
  printerColumns: [
    { name: "ClusterID", type: "string", priority: 1, jsonPath: ".spec.clusterIdentity.clusterID" },
    { name: "ClusterName", type: "string", priority: 1, jsonPath: ".spec.clusterIdentity.clusterName" },
    peeringColumn("Outgoing peering", "OutgoingPeering"),
    peeringColumn("Incoming peering", "IncomingPeering"),
    peeringColumn("Networking", "NetworkStatus"),
    peeringColumn("Authentication", "AuthenticationStatus"),
    // Not in Liqo v0.5's columns: how the cluster became known (Manual, IncomingPeering, LAN, WAN).
    { name: "Discovery", type: "string", jsonPath: ".metadata.labels.discovery\\.liqo\\.io/discovery-type" },
    ageColumn,
  ],
  spec: ForeignClusterSpecSchema,
  status: ForeignClusterStatusSchema,
});

export type ForeignCluster = v.InferOutput<typeof ForeignClusterKind.schema>;
export type ForeignClusterSpec = v.InferOutput<typeof ForeignClusterSpecSchema>;
export type ForeignClusterStatus = v.InferOutput<typeof ForeignClusterStatusSchema>;
export type PeeringCondition = v.InferOutput<typeof PeeringConditionSchema>;

export const ForeignClusterResource = ForeignClusterKind.resource;
export const ForeignClusterCrd = ForeignClusterKind.crd;
export const parseForeignCluster = ForeignClusterKind.parse;
