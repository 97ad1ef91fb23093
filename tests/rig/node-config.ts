// The configuration files of one real rig node (containerd, CNI, kubelet, kube-proxy) and the
// addresses of the rig's node network: pure functions, so they are tested without a node.

/** The host bridge every real node of one rig hangs off, and its /24. */
export interface RigNetwork {
  index: number;
  bridge: string;
  /** The host's address on the bridge: nodes reach their API server there. */
  gateway: string;
  prefix: string;
}

export function rigNetwork(index: number): RigNetwork {
  if (!Number.isInteger(index) || index < 0 || index > 63)
    throw new Error(`rig network index ${index} is out of 0..63`);
  const prefix = `172.31.${index}`;
  return { index, bridge: `lrig${index}`, gateway: `${prefix}.1`, prefix };
}

/** The n-th real node of the rig (0-based, counted over every cluster): its address on the bridge. */
export function nodeAddress(net: RigNetwork, n: number): string {
  if (n < 0 || n > 200) throw new Error(`a rig holds at most 200 real nodes, asked for node #${n + 1}`);
  return `${net.prefix}.${10 + n}`;
}

/** The n-th address of a CIDR (the service CIDR's 10th is the cluster DNS, as kubeadm does). */
export function nthAddress(cidr: string, n: number): string {
  const [base] = cidr.split("/");
  const value = base!.split(".").reduce((acc, p) => acc * 256 + Number(p), 0) + n;
  return [24, 16, 8, 0].map((s) => Math.floor(value / 2 ** s) % 256).join(".");
}

export interface NodePaths {
  dir: string;
  socket: string;
  cniConfDir: string;
  cniBinDir: string;
  /** containerd's registry config_path: a hosts.toml per registry host, naming the rig's registry. */
  registryHosts?: string;
}

/** Where a node's containerd keeps its content and snapshots (node-store.ts fills it before it starts). */
export const containerdRoot = (dir: string) => `${dir}/containerd/root`;

/** containerd 1.6 (config version 2): everything of its own under the node's folder. */
export function containerdConfig(p: NodePaths, sandboxImage: string): string {
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = "${containerdRoot(p.dir)}"
state = "${p.dir}/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "${p.socket}"

[${cri}]
  sandbox_image = "${sandboxImage}"
  # Without it every sandbox fails here: runc cannot lower oom_score_adj (no CAP_SYS_RESOURCE).
  restrict_oom_score_adj = true
  # Pod network namespaces live under the node's state, so stopping the node finds them all.
  netns_mounts_under_state_dir = true

[${cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[${cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[${cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  # runc's state per node: otherwise every containerd shares /run/containerd/runc/k8s.io.
  Root = "${p.dir}/runc"

[${cri}.cni]
  bin_dir = "${p.cniBinDir}"
  conf_dir = "${p.cniConfDir}"
${
  p.registryHosts
    ? `
[${cri}.registry]
  config_path = "${p.registryHosts}"
`
    : ""
}`;
}

/** The bridge plugin on cni0 with host-local addresses from the node's pod CIDR. */
export function cniConfig(podCIDR: string, ipamDir: string, mtu = 1500): string {
  return JSON.stringify(
    {
      cniVersion: "0.4.0",
      name: "rig",
      plugins: [
        {
          type: "bridge",
          bridge: "cni0",
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          mtu,
          ipam: {
            type: "host-local",
            ranges: [[{ subnet: podCIDR }]],
            routes: [{ dst: "0.0.0.0/0" }],
            dataDir: ipamDir,
          },
        },
        { type: "portmap", capabilities: { portMappings: true } },
      ],
    },
    null,
    2,
  );
}

export interface KubeletInputs {
  dir: string;
  socket: string;
  caFile: string;
  clusterDns: string;
  cgroupRoot: string;
}

/** JSON is YAML: the kubelet reads this config file as is. */
export function kubeletConfig(k: KubeletInputs): string {
  return JSON.stringify(
    {
      apiVersion: "kubelet.config.k8s.io/v1beta1",
      kind: "KubeletConfiguration",
      // Only holders of a certificate of the cluster's CA (the API server's kubelet client) get in.
      authentication: { anonymous: { enabled: false }, webhook: { enabled: false }, x509: { clientCAFile: k.caFile } },
      authorization: { mode: "AlwaysAllow" },
      cgroupDriver: "cgroupfs",
      cgroupRoot: k.cgroupRoot,
      failCgroupV1: false,
      clusterDNS: [k.clusterDns],
      clusterDomain: "cluster.local",
      containerRuntimeEndpoint: `unix://${k.socket}`,
      // The kubelet deletes log folders of pods it does not know: one folder per node.
      podLogsDir: `${k.dir}/pod-logs`,
      volumePluginDir: `${k.dir}/volume-plugins`,
      readOnlyPort: 0,
      failSwapOn: false,
      serializeImagePulls: false,
      // The gateway turns forwarding on in its own pod namespace.
      allowedUnsafeSysctls: ["net.ipv4.ip_forward", "net.ipv4.conf.all.src_valid_mark"],
      // Every node reports the whole machine; nothing is reserved, nothing evicted for a busy laptop.
      evictionHard: { "memory.available": "100Mi", "nodefs.available": "2%", "imagefs.available": "2%" },
      imageGCHighThresholdPercent: 98,
      imageGCLowThresholdPercent: 95,
      rotateCertificates: false,
      serverTLSBootstrap: false,
      healthzBindAddress: "127.0.0.1",
      healthzPort: 10248,
    },
    null,
    2,
  );
}

export function kubeProxyConfig(kubeconfig: string, clusterCIDR: string, node: string): string {
  return JSON.stringify(
    {
      apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
      kind: "KubeProxyConfiguration",
      clientConnection: { kubeconfig },
      mode: "iptables",
      clusterCIDR,
      hostnameOverride: node,
      bindAddress: "0.0.0.0",
      healthzBindAddress: "0.0.0.0:10256",
      metricsBindAddress: "127.0.0.1:10249",
      // conntrack sizes are the machine's; a node namespace leaves them alone.
      conntrack: { maxPerCore: 0, min: 0 },
    },
    null,
    2,
  );
}

/**
 * nftables in the node's namespace: pod traffic leaving the node for anything but the cluster's
 * pods (the API server on the host bridge, other clusters' nodes) takes the node's address, as
 * kind's ip-masq-agent does. The host then needs no route to any pod CIDR, and clusters with the
 * same pod CIDR coexist on one bridge.
 */
export function nodeNatRules(table: string, clusterPodCIDR: string, uplink = "eth0"): string {
  return `table ip ${table}
delete table ip ${table}
table ip ${table} {
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    oifname "${uplink}" ip saddr ${clusterPodCIDR} ip daddr != ${clusterPodCIDR} masquerade
  }
}
`;
}
