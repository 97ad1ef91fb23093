// The generated CRDs against facts read from Liqo v0.5.4's deployments/liqo/crds: names, scope,
// short names, printer columns, status subresource, enums and defaults users and peers rely on.
import { describe, expect, test } from "bun:test";
import { allCrds } from "./crds.ts";
import type { CustomResourceDefinition } from "./define.ts";
import type { OpenApiSchema } from "./openapi.ts";
import { crdsAsYamlStream } from "./print-crds.ts";

interface Facts {
  scope: "Cluster" | "Namespaced";
  shortNames?: string[];
  liqoCategory: boolean;
  status: boolean;
  /** name@jsonPath, with the priority when not 0 */
  columns: string[];
}

const local = "Local@.metadata.labels.liqo\\.io/replication";
const age = "Age@.metadata.creationTimestamp";
const liqo: Record<string, Facts> = {
  "foreignclusters.discovery.liqo.io": {
    scope: "Cluster",
    liqoCategory: true,
    status: true,
    columns: [
      "ClusterID@.spec.clusterIdentity.clusterID@1",
      "ClusterName@.spec.clusterIdentity.clusterName@1",
      "Outgoing peering@.status.peeringConditions[?(@.type == 'OutgoingPeering')].status",
      "Incoming peering@.status.peeringConditions[?(@.type == 'IncomingPeering')].status",
      "Networking@.status.peeringConditions[?(@.type == 'NetworkStatus')].status",
      "Authentication@.status.peeringConditions[?(@.type == 'AuthenticationStatus')].status",
      "Discovery@.metadata.labels.discovery\\.liqo\\.io/discovery-type",
      age,
    ],
  },
  "resourcerequests.discovery.liqo.io": {
    scope: "Namespaced",
    liqoCategory: true,
    status: true,
    columns: [local, age],
  },
  "resourceoffers.sharing.liqo.io": {
    scope: "Namespaced",
    shortNames: ["offer"],
    liqoCategory: true,
    status: true,
    columns: ["Status@.status.phase", "VirtualKubeletStatus@.status.virtualKubeletStatus", local, age],
  },
  "namespaceoffloadings.offloading.liqo.io": {
    scope: "Namespaced",
    shortNames: ["nsof"],
    liqoCategory: true,
    status: true,
    columns: [
      "NamespaceMappingStrategy@.spec.namespaceMappingStrategy",
      "PodOffloadingStrategy@.spec.podOffloadingStrategy",
      "OffloadingPhase@.status.offloadingPhase",
      "RemoteNamespaceName@.status.remoteNamespaceName@10",
      age,
    ],
  },
  "namespacemaps.virtualkubelet.liqo.io": {
    scope: "Namespaced",
    liqoCategory: true,
    status: true,
    columns: [local, age],
  },
  // Liqo v0.5.4's has no status; ours carries the provider's quota decision, as Liqo 1.x's status does
  // (a subresource, so the consumer's identity cannot write it: docs/tenancy.md).
  "shadowpods.virtualkubelet.liqo.io": {
    scope: "Namespaced",
    liqoCategory: false,
    status: true,
    columns: ["Quota@.status.quota.phase", age],
  },
  // Liqo 1.x's (several virtual nodes per peering).
  "virtualnodes.virtualkubelet.liqo.io": {
    scope: "Namespaced",
    shortNames: ["vn"],
    liqoCategory: true,
    status: true,
    columns: [
      "ClusterID@.spec.clusterID",
      'Ready@.status.conditions[?(@.type=="Ready")].status',
      'Reason@.status.conditions[?(@.type=="Ready")].reason@1',
      age,
    ],
  },
  "networkconfigs.net.liqo.io": {
    scope: "Namespaced",
    liqoCategory: true,
    status: true,
    columns: [
      "Peering Cluster@.spec.cluster.clusterName",
      "Endpoint IP@.spec.endpointIP@1",
      "VPN Backend@.spec.backendType@1",
      "Processed@.status.processed",
      local,
      age,
    ],
  },
  "tunnelendpoints.net.liqo.io": {
    scope: "Namespaced",
    liqoCategory: true,
    status: true,
    columns: [
      "Peering Cluster ID@.spec.clusterID",
      "Endpoint IP@.spec.endpointIP@1",
      "Backend type@.spec.backendType",
      "Connection status@.status.connection.status",
      age,
    ],
  },
  "natmappings.net.liqo.io": { scope: "Cluster", liqoCategory: true, status: true, columns: [] },
  "ipamstorages.net.liqo.io": { scope: "Cluster", liqoCategory: true, status: false, columns: [] },
  // WAN discovery (core/discovery/wan.ts).
  "searchdomains.discovery.liqo.io": {
    scope: "Cluster",
    liqoCategory: true,
    status: true,
    columns: ["Domain@.spec.domain", "Autojoin@.spec.autojoin", age],
  },
  // The Multi-Cluster Services API (sigs.k8s.io/mcs-api v1alpha1), not in Liqo v0.5.4, and liqo's
  // carrier of exported services between peers (core/mcs).
  "serviceexports.multicluster.x-k8s.io": {
    scope: "Namespaced",
    shortNames: ["svcex", "svcexport"],
    liqoCategory: false,
    status: true,
    columns: [age],
  },
  "serviceimports.multicluster.x-k8s.io": {
    scope: "Namespaced",
    shortNames: ["svcim", "svcimport"],
    liqoCategory: false,
    status: true,
    columns: ["Type@.spec.type", "IP@.spec.ips", age],
  },
  "exportedservices.multicluster.liqo.io": {
    scope: "Namespaced",
    liqoCategory: true,
    status: false,
    columns: [
      "Namespace@.spec.serviceNamespace",
      "Service@.spec.serviceName",
      "Origin@.metadata.labels.multicluster\\.liqo\\.io/origin-cluster-id",
      age,
    ],
  },
};

const crd = (name: string) => allCrds.find((c) => c.metadata.name === name)!;
const schemaOf = (name: string) => crd(name).spec.versions[0]!.schema.openAPIV3Schema;
const at = (s: OpenApiSchema, path: string) =>
  path.split(".").reduce<OpenApiSchema | undefined>((n, p) => (p === "[]" ? n?.items : n?.properties?.[p]), s);

test("the ten CRDs of Liqo v0.5.4, SearchDomain, VirtualNode, and the MCS API's with their carrier", () => {
  expect(allCrds.map((c) => c.metadata.name).sort()).toEqual(Object.keys(liqo).sort());
});

describe.each(Object.entries(liqo))("%s", (name, facts) => {
  const c = () => crd(name);
  test("names, scope and version", () => {
    const [plural, ...group] = name.split(".");
    expect(c().spec.group).toBe(group.join("."));
    expect(c().spec.names.plural).toBe(plural!);
    expect(c().spec.names.listKind).toBe(`${c().spec.names.kind}List`);
    expect(c().spec.scope).toBe(facts.scope);
    expect(c().spec.names.shortNames).toEqual(facts.shortNames as never);
    expect(c().spec.names.categories).toEqual(facts.liqoCategory ? ["liqo"] : (undefined as never));
    expect(c().spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([["v1alpha1", true, true]]);
  });

  test("printer columns", () => {
    const cols = (c().spec.versions[0]!.additionalPrinterColumns ?? []).map((p) =>
      [p.name, p.jsonPath, p.priority].filter((x) => x !== undefined).join("@"),
    );
    expect(cols).toEqual(facts.columns);
  });

  test("status subresource", () => {
    expect(c().spec.versions[0]!.subresources?.status !== undefined).toBe(facts.status);
  });

  test("the schema is structural: every node has a type or is int-or-string", () => {
    const walk = (s: OpenApiSchema, path: string) => {
      if (!s["x-kubernetes-int-or-string"])
        expect({ path, type: s.type }).toMatchObject({ path, type: expect.any(String) });
      for (const [k, p] of Object.entries(s.properties ?? {})) walk(p, `${path}.${k}`);
      if (s.items) walk(s.items, `${path}[]`);
      if (s.additionalProperties) walk(s.additionalProperties, `${path}{}`);
    };
    walk(schemaOf(name), name);
  });
});

describe("enums, defaults and required fields as Liqo declares them", () => {
  const fc = schemaOf("foreignclusters.discovery.liqo.io");
  test("ForeignCluster spec", () => {
    for (const f of ["outgoingPeeringEnabled", "incomingPeeringEnabled"]) {
      expect(at(fc, `spec.${f}`)).toMatchObject({ enum: ["Auto", "No", "Yes"], default: "Auto" });
    }
    expect(at(fc, "spec.networkingEnabled")).toMatchObject({ enum: ["No", "Yes"], default: "Yes" });
    expect(at(fc, "spec.insecureSkipTLSVerify")).toMatchObject({ type: "boolean", default: true });
    expect(at(fc, "spec.ttl")).toMatchObject({ type: "integer", minimum: 0 });
    expect(at(fc, "spec")!.required).toEqual(["foreignAuthUrl"]);
    expect(at(fc, "spec.clusterIdentity")!.required).toEqual(["clusterID", "clusterName"]);
    expect(at(fc, "spec.foreignAuthUrl")!.pattern).toStartWith("https:\\/\\/");
    // Not in Liqo v0.5: named amounts, 0 or more (a minus sign or "2x" is refused by the API server).
    for (const f of ["offeredResources", "requestedResources"]) {
      const amount = at(fc, `spec.${f}`)!.additionalProperties!;
      expect(amount).toMatchObject({ "x-kubernetes-int-or-string": true, minimum: 0 });
      const pattern = new RegExp(amount.pattern!);
      expect(["2", "500m", "4Gi", "1e3", "+1"].every((x) => pattern.test(x))).toBe(true);
      expect(["-1", "2x", "-500m", ""].some((x) => pattern.test(x))).toBe(false);
    }
  });

  test("ForeignCluster peering conditions", () => {
    const cond = at(fc, "status.peeringConditions.[]")!;
    expect(cond.required).toEqual(["status", "type"]);
    expect(at(cond, "type")!.enum).toEqual([
      "OutgoingPeering",
      "IncomingPeering",
      "NetworkStatus",
      "AuthenticationStatus",
      "ProcessForeignClusterStatus",
    ]);
    expect(at(cond, "status")).toMatchObject({
      default: "None",
      enum: ["None", "Pending", "Established", "Disconnecting", "Denied", "EmptyDenied", "Error", "Success"],
    });
    expect(at(cond, "lastTransitionTime")!.format).toBe("date-time");
  });

  test("NamespaceOffloading", () => {
    const no = schemaOf("namespaceoffloadings.offloading.liqo.io");
    expect(no.required).toEqual(["spec"]);
    expect(at(no, "spec.namespaceMappingStrategy")).toMatchObject({
      enum: ["EnforceSameName", "DefaultName"],
      default: "DefaultName",
    });
    expect(at(no, "spec.podOffloadingStrategy")).toMatchObject({
      enum: ["Local", "Remote", "LocalAndRemote"],
      default: "LocalAndRemote",
    });
    expect(at(no, "spec.clusterSelector")!.required).toEqual(["nodeSelectorTerms"]);
    expect(at(no, "status.remoteNamespacesConditions")!.additionalProperties!.items!.required).toEqual([
      "status",
      "type",
    ]);
  });

  test("ResourceOffer and ResourceRequest", () => {
    const ro = schemaOf("resourceoffers.sharing.liqo.io");
    expect(at(ro, "status.phase")).toMatchObject({
      enum: ["Pending", "ManualActionRequired", "Accepted", "Refused"],
      default: "Pending",
    });
    expect(at(ro, "status")!.required).toEqual(["phase"]);
    expect(at(ro, "spec.resourceQuota.hard")!.additionalProperties!["x-kubernetes-int-or-string"]).toBe(true);
    const rr = schemaOf("resourcerequests.discovery.liqo.io");
    expect(at(rr, "spec")!.required).toEqual(["authUrl", "clusterIdentity"]);
    expect(at(rr, "status.offerState")).toMatchObject({ enum: ["None", "Created"], default: "None" });
    expect(at(rr, "spec.requestedResources")!.additionalProperties!.minimum).toBe(0);
    expect(at(rr, "status.resourceGrants.[]")!.required).toEqual(["asked", "capped", "granted", "name"]);
  });

  test("net.liqo.io kinds keep Liqo's field names, backend_config included", () => {
    expect(at(schemaOf("networkconfigs.net.liqo.io"), "spec")!.required).toEqual([
      "backendType",
      "backend_config",
      "cluster",
      "endpointIP",
      "externalCIDR",
      "podCIDR",
    ]);
    expect(at(schemaOf("tunnelendpoints.net.liqo.io"), "spec.remoteNATPodCIDR")!.default).toBe("None");
    expect(at(schemaOf("ipamstorages.net.liqo.io"), "spec.prefixes")!.additionalProperties!.format).toBe("byte");
    expect(at(schemaOf("natmappings.net.liqo.io"), "spec")!.required).toEqual([
      "clusterID",
      "clusterMappings",
      "externalCIDR",
      "podCIDR",
    ]);
  });
});

test("print-crds writes one YAML document per CRD", () => {
  // Bun's YAML parser returns one value per document of a stream.
  const docs = Bun.YAML.parse(crdsAsYamlStream()) as CustomResourceDefinition[];
  expect(docs.map((d) => d.metadata.name)).toEqual(allCrds.map((c) => c.metadata.name));
  expect(docs[0]).toEqual(allCrds[0]!);
});
