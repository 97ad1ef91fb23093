import { describe, expect, test } from "bun:test";
import {
  cniConfig,
  containerdConfig,
  kubeletConfig,
  kubeProxyConfig,
  nodeAddress,
  nodeNatRules,
  nthAddress,
  rigNetwork,
} from "./node-config.ts";

describe("rig network addresses", () => {
  test("each rig index has its own bridge and /24", () => {
    expect(rigNetwork(0)).toEqual({ index: 0, bridge: "lrig0", gateway: "172.31.0.1", prefix: "172.31.0" });
    expect(rigNetwork(7).gateway).toBe("172.31.7.1");
    expect(() => rigNetwork(64)).toThrow(/out of 0..63/);
    expect(() => rigNetwork(-1)).toThrow(/out of 0..63/);
  });
  test("nodes count from .10 and stop before the /24 runs out", () => {
    expect(nodeAddress(rigNetwork(2), 0)).toBe("172.31.2.10");
    expect(nodeAddress(rigNetwork(2), 5)).toBe("172.31.2.15");
    expect(() => nodeAddress(rigNetwork(2), 201)).toThrow(/at most 200/);
  });
  test("nthAddress carries across octets", () => {
    expect(nthAddress("10.50.0.0/16", 10)).toBe("10.50.0.10");
    expect(nthAddress("10.50.0.250/16", 10)).toBe("10.50.1.4");
  });
});

describe("node configuration files", () => {
  const paths = {
    dir: "/r/n1",
    socket: "/r/n1/containerd.sock",
    cniConfDir: "/r/n1/cni/net.d",
    cniBinDir: "/usr/lib/cni",
  };
  test("containerd keeps its state, runc root and pod namespaces under the node", () => {
    const toml = containerdConfig(paths, "registry.k8s.io/pause:3.10");
    expect(toml).toContain('root = "/r/n1/containerd/root"');
    expect(toml).toContain('address = "/r/n1/containerd.sock"');
    expect(toml).toContain('Root = "/r/n1/runc"');
    expect(toml).toContain("restrict_oom_score_adj = true");
    expect(toml).toContain("netns_mounts_under_state_dir = true");
    expect(toml).toContain('sandbox_image = "registry.k8s.io/pause:3.10"');
    expect(toml).toContain("SystemdCgroup = false");
    expect(toml).not.toContain("config_path");
  });
  test("containerd finds the rig's registry through a hosts directory", () => {
    const toml = containerdConfig({ ...paths, registryHosts: "/r/registry/hosts" }, "registry.k8s.io/pause:3.10");
    expect(toml).toContain('[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "/r/registry/hosts"');
  });
  test("CNI hands out the node's pod CIDR from a per-node IPAM folder", () => {
    const conf = JSON.parse(cniConfig("10.100.3.0/24", "/r/n1/cni/ipam"));
    const bridge = conf.plugins[0];
    expect(bridge.type).toBe("bridge");
    expect(bridge.ipam.ranges).toEqual([[{ subnet: "10.100.3.0/24" }]]);
    expect(bridge.ipam.dataDir).toBe("/r/n1/cni/ipam");
    expect(bridge.ipMasq).toBe(false);
  });
  test("kubelet: cgroupfs under the node's cgroup, its own log folder, the cluster DNS", () => {
    const k = JSON.parse(
      kubeletConfig({
        dir: "/r/n1",
        socket: "/r/n1/containerd.sock",
        caFile: "/pki/ca.crt",
        clusterDns: "10.50.0.10",
        cgroupRoot: "/lrig0-rome-node-1",
      }),
    );
    expect(k.cgroupDriver).toBe("cgroupfs");
    expect(k.cgroupRoot).toBe("/lrig0-rome-node-1");
    expect(k.failCgroupV1).toBe(false);
    expect(k.podLogsDir).toBe("/r/n1/pod-logs");
    expect(k.clusterDNS).toEqual(["10.50.0.10"]);
    expect(k.containerRuntimeEndpoint).toBe("unix:///r/n1/containerd.sock");
    expect(k.authentication.anonymous.enabled).toBe(false);
    expect(k.allowedUnsafeSysctls).toContain("net.ipv4.ip_forward");
  });
  test("kube-proxy: iptables, the cluster's pod CIDR, the node's name", () => {
    const p = JSON.parse(kubeProxyConfig("/r/n1/kp.kubeconfig", "10.200.0.0/16", "rome-node-1"));
    expect(p.mode).toBe("iptables");
    expect(p.clusterCIDR).toBe("10.200.0.0/16");
    expect(p.hostnameOverride).toBe("rome-node-1");
    // Masquerading every Service packet would give answers from other clusters' pods (behind
    // liqo's gateway) the address of an overlay interface: only kube-proxy's own rules apply.
    expect(p.iptables).toBeUndefined();
  });
  test("the masquerade rule spares traffic between the cluster's own pods", () => {
    const rules = nodeNatRules("liqo_rig", "10.100.0.0/16");
    expect(rules).toContain('oifname "eth0" ip saddr 10.100.0.0/16 ip daddr != 10.100.0.0/16 masquerade');
    // Re-applying replaces the table rather than stacking a second rule.
    expect(rules.indexOf("delete table ip liqo_rig")).toBeLessThan(rules.lastIndexOf("table ip liqo_rig {"));
  });
});
