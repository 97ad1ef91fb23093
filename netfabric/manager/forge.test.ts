import { describe, expect, test } from "bun:test";
import type { NetworkConfig } from "../../core/apis/net/networkconfig.ts";
import { parseNetworkConfig, parseTunnelEndpoint } from "../../core/apis/index.ts";
import { createIpam } from "../ipam/index.ts";
import {
  bothProcessed,
  localNetworkConfig,
  natMappingSpec,
  networkConfigRole,
  remoteNetworkConfigStatus,
  tunnelEndpointSpec,
  uniqueName,
} from "./forge.ts";
import { gatewayNatMappings } from "../shared/nat.ts";

const milan = { remoteClusterId: "milan-id", remoteClusterName: "milan", tenantNamespace: "liqo-tenant-milan" };
const params = {
  podCidr: "10.200.0.0/16",
  externalCidr: "10.210.0.0/16",
  endpointIp: "172.18.0.2",
  port: 5871,
  publicKey: "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmE=",
};

describe("remoteNetworkConfigStatus", () => {
  test("kept networks are None, remapped ones are named, processed is true", () => {
    expect(
      remoteNetworkConfigStatus({
        podCidr: "10.0.0.0/16",
        externalCidr: "10.211.0.0/16",
        podRemapped: true,
        externalRemapped: false,
      }),
    ).toEqual({ processed: true, podCIDRNAT: "10.0.0.0/16", externalCIDRNAT: "None" });
    expect(
      remoteNetworkConfigStatus({
        podCidr: "10.1.0.0/16",
        externalCidr: "10.2.0.0/16",
        podRemapped: false,
        externalRemapped: true,
      }),
    ).toEqual({ processed: true, podCIDRNAT: "None", externalCIDRNAT: "10.2.0.0/16" });
  });

  test("what an overlapping peer gets from the IPAM", () => {
    const ipam = createIpam({ podCidr: "10.200.0.0/16", serviceCidr: "10.50.0.0/16", externalCidr: "10.210.0.0/16" });
    const status = remoteNetworkConfigStatus(
      ipam.mapRemoteNetworks("milan-id", { podCidr: "10.200.0.0/16", externalCidr: "10.211.0.0/16" }),
    );
    expect(status.podCIDRNAT).toBe("10.0.0.0/16");
    expect(status.externalCIDRNAT).toBe("None");
  });
});

describe("localNetworkConfig", () => {
  const nc = localNetworkConfig(milan, params);
  test("named like Liqo's UniqueName, in the tenant namespace", () => {
    expect(nc.metadata.name).toBe(uniqueName("milan", "milan-id"));
    expect(nc.metadata.name).toMatch(/^milan-[0-9a-f]{6}$/);
    expect(nc.metadata.namespace).toBe("liqo-tenant-milan");
  });
  test("labels ask the CRD replicator to send it to the peer", () => {
    expect(nc.metadata.labels).toEqual({
      "liqo.io/replication": "true",
      "liqo.io/ownership": "netcfgCreator",
      "liqo.io/remoteID": "milan-id",
    });
  });
  test("spec carries the destination, our networks and the WireGuard backend", () => {
    expect(nc.spec).toEqual({
      cluster: { clusterID: "milan-id", clusterName: "milan" },
      podCIDR: "10.200.0.0/16",
      externalCIDR: "10.210.0.0/16",
      endpointIP: "172.18.0.2",
      backendType: "wireguard",
      backend_config: { publicKey: params.publicKey, port: "5871" },
    });
  });
  test("is a valid NetworkConfig", () => {
    expect(() => parseNetworkConfig(nc)).not.toThrow();
  });
});

describe("networkConfigRole", () => {
  test("ours, theirs (as the replicator labels it), or neither", () => {
    expect(networkConfigRole({ "liqo.io/replication": "true", "liqo.io/remoteID": "milan-id" })).toEqual({
      clusterId: "milan-id",
      local: true,
    });
    expect(
      networkConfigRole({
        "liqo.io/replication": "false",
        "liqo.io/replicated": "true",
        "liqo.io/originID": "milan-id",
        "liqo.io/remoteID": "rome-id",
      }),
    ).toEqual({ clusterId: "milan-id", local: false });
    expect(networkConfigRole({ "liqo.io/remoteID": "milan-id" })).toBeUndefined();
    expect(networkConfigRole(undefined)).toBeUndefined();
  });
});

describe("tunnelEndpointSpec", () => {
  const local = {
    ...localNetworkConfig(milan, params),
    status: { processed: true, podCIDRNAT: "10.1.0.0/16", externalCIDRNAT: "None" },
  } as NetworkConfig;
  const remote = {
    metadata: { name: "rome-x", namespace: "liqo-tenant-milan" },
    spec: {
      ...localNetworkConfig(milan, {
        ...params,
        endpointIp: "172.18.0.3",
        port: 51820,
        publicKey: "YmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm8=",
      }).spec,
      cluster: { clusterID: "rome-id", clusterName: "rome" },
    },
    status: { processed: true, podCIDRNAT: "10.0.0.0/16", externalCIDRNAT: "None" },
  } as NetworkConfig;
  const spec = tunnelEndpointSpec(local, remote);

  test("local networks with the peer's remapping of them", () => {
    expect([spec.localPodCIDR, spec.localNATPodCIDR, spec.localExternalCIDR, spec.localNATExternalCIDR]).toEqual([
      "10.200.0.0/16",
      "10.1.0.0/16",
      "10.210.0.0/16",
      "None",
    ]);
  });
  test("remote networks with our remapping of them", () => {
    expect([spec.remotePodCIDR, spec.remoteNATPodCIDR, spec.remoteExternalCIDR, spec.remoteNATExternalCIDR]).toEqual([
      "10.200.0.0/16",
      "10.0.0.0/16",
      "10.210.0.0/16",
      "None",
    ]);
  });
  test("the peer's gateway and key", () => {
    expect(spec.clusterID).toBe("milan-id");
    expect(spec.endpointIP).toBe("172.18.0.3");
    expect(spec.backend_config).toEqual({ publicKey: "YmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm8=", port: "51820" });
    expect(() => parseTunnelEndpoint({ metadata: { name: "t" }, spec })).not.toThrow();
  });
  test("needs both sides processed", () => {
    expect(bothProcessed(local, remote)).toBe(true);
    expect(bothProcessed(local, { ...remote, status: { processed: false } } as NetworkConfig)).toBe(false);
    expect(bothProcessed(undefined, remote)).toBe(false);
  });
});

describe("natMappingSpec", () => {
  test("maps endpoints to the external address as the peer sees it, and back for the gateway", () => {
    const spec = natMappingSpec(
      {
        clusterId: "milan-id",
        podCidr: "10.3.0.0/16",
        externalCidr: "10.9.0.0/16",
        clusterMappings: { "10.120.0.7": "10.210.0.2" },
      },
      "10.0.0.0/16",
      "10.210.0.0/16",
    );
    expect(spec).toEqual({
      clusterID: "milan-id",
      podCIDR: "10.0.0.0/16",
      externalCIDR: "10.9.0.0/16",
      clusterMappings: { "10.120.0.7": "10.9.0.2" },
    });
    expect(gatewayNatMappings(spec, "10.210.0.0/16")).toEqual({ "10.120.0.7": "10.210.0.2" });
  });
});
