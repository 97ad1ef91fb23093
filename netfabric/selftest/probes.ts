// The network self-test's probes (`liqoctl test network`), as pure pieces: the shell script a probe
// pod runs, the parsing of what it reports, the likely cause of each failure and the table. The
// pods and the Kubernetes side live in cli/test-network/.
//
// A probe pod runs every check at once (background subshells), each retrying until it passes or
// the probe's budget runs out, and reports one line per check in its termination message, so no
// exec or log streaming is needed: the pod's status carries the answer, also through the virtual
// node.

export type CheckId =
  | "pod-to-remote-pod"
  | "pod-to-service"
  | "remote-pod-to-pod"
  | "remote-pod-to-reflected-service"
  | "node-to-remote-pod"
  | "path-mtu"
  | "remote-path-mtu"
  | "tcp-bulk"
  | "remote-tcp-bulk"
  // With the peer's kubeconfig: a pod of the peer's own (not offloaded) and a local pod behind no Service.
  | "pod-to-peer-pod"
  | "peer-pod-to-pod"
  | "peer-pod-to-reflected-service";

export type Check =
  /** HTTP GET http://<target>/; passes when the page names `server` (the hello image's "Server name: …"). */
  | { id: CheckId; kind: "http"; target: string; server: string }
  /** HTTP GET http://<target>/ that must NOT be answered (a security mode refuses it); passes after 3 failed tries in a row. */
  | { id: CheckId; kind: "refused"; target: string; server: string }
  /** Largest DF ping that passes, between 1280 bytes and the pod's own MTU, and what happens just beyond it. */
  | { id: CheckId; kind: "mtu"; target: string }
  /** Reads `bytes` from <target>:<port> over TCP (the server pods send that many, then close). */
  | { id: CheckId; kind: "bulk"; target: string; port: number; bytes: number };

export interface CheckResult {
  id: CheckId;
  ok: boolean;
  detail: string;
}

/** The smallest MTU an IPv4 path to a pod may have and still count as working (IPv6's minimum). */
export const MIN_PATH_MTU = 1280;
export const BULK_PORT = 9000;
export const BULK_BYTES = 1_048_576;

/** Shell-quotes one word. */
function q(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

const ADDRESS = /^[A-Za-z0-9.:-]+$/;

function checkLine(c: Check): string {
  if (!ADDRESS.test(c.target))
    throw new Error(`check ${c.id}: target ${JSON.stringify(c.target)} is not an address or a DNS name`);
  if (c.kind === "http") return `run ${c.id} http ${q(c.target)} ${q(c.server)}`;
  if (c.kind === "refused") return `run ${c.id} refused ${q(c.target)} ${q(c.server)}`;
  if (c.kind === "mtu") return `run ${c.id} mtu ${q(c.target)} "$podmtu"`;
  return `run ${c.id} bulk ${q(c.target)} ${c.port} ${c.bytes}`;
}

/**
 * The script a probe pod runs (sh -c). Needs sh, curl, ping (iputils, for -M do), nc and timeout.
 * Every check retries for at most `budgetSeconds`; the results go to /dev/termination-log as
 * `<id>\t<ok|fail>\t<detail>` lines and to stdout.
 */
export function probeScript(checks: Check[], budgetSeconds: number): string {
  if (!Number.isInteger(budgetSeconds) || budgetSeconds < 1)
    throw new Error(`probe budget must be a whole number of seconds ≥ 1, got ${budgetSeconds}`);
  return [
    "set -u",
    "dir=$(mktemp -d)",
    `end=$(( $(date +%s) + ${budgetSeconds} ))`,
    "podmtu=$(cat /sys/class/net/eth0/mtu 2>/dev/null || echo 1500)",
    // One line, no tabs, at most 300 characters: the termination message holds 4 KiB in all.
    `tidy() { tr '\\t\\n' '  ' | cut -c1-300; }`,
    `http() { body=$(curl -sS --max-time 4 "http://$1/" 2>&1) || { printf '%s' "$body" | tail -n 1; return 1; }`,
    `  printf '%s' "$body" | grep -q "Server name: $2" || { printf 'answered, but not by %s: %s' "$2" "$(printf '%s' "$body" | head -c 120)"; return 1; }`,
    `  printf 'answered by %s' "$2"; }`,
    // Three tries in a row, none answered: refused (the gateway's reject is immediate; a timeout counts too).
    `refused() { for try in 1 2 3; do if curl -sS --max-time 3 -o /dev/null "http://$1/" 2>/dev/null; then printf '%s answered: the security mode lets it through' "$2"; return 1; fi; sleep 1; done`,
    `  printf 'not answered in 3 tries, as the security mode requires: %s' "$(curl -sS --max-time 3 -o /dev/null "http://$1/" 2>&1 | tail -n 1)"; }`,
    `bulk() { got=$(timeout 15 nc -d -w 10 "$1" "$2" | wc -c)`,
    `  [ "$got" -eq "$3" ] || { printf 'received %s of %s bytes' "$got" "$3"; return 1; }`,
    `  printf '%s bytes received' "$3"; }`,
    // Binary search for the largest packet a DF ping carries; then one byte more must bring an
    // ICMP "fragmentation needed" (or the kernel's cached "message too long"), not silence.
    `passes() { ping -n -M do -c 1 -W 1 -s $(( $2 - 28 )) "$1" >/dev/null 2>&1; }`,
    `mtu() { passes "$1" ${MIN_PATH_MTU} || { printf 'no DF ping of ${MIN_PATH_MTU} bytes passes'; return 1; }`,
    `  lo=${MIN_PATH_MTU}; hi=$(( $2 + 1 ))`,
    `  while [ $(( hi - lo )) -gt 1 ]; do mid=$(( (lo + hi) / 2 )); if passes "$1" $mid; then lo=$mid; else hi=$mid; fi; done`,
    `  [ "$lo" -ge "$2" ] && { printf 'path MTU %s (the pod MTU): nothing larger to try' "$lo"; return 0; }`,
    `  beyond=$(ping -n -M do -c 2 -i 0.2 -W 2 -s $(( lo + 1 - 28 )) "$1" 2>&1)`,
    `  if printf '%s' "$beyond" | grep -qiE 'frag needed|message too long|mtu ?='; then printf 'path MTU %s; %s bytes with DF: fragmentation needed came back (PMTUD works)' "$lo" $(( lo + 1 )); return 0; fi`,
    `  printf 'path MTU %s; %s bytes with DF vanish without an ICMP fragmentation-needed (a PMTUD black hole)' "$lo" $(( lo + 1 )); return 1; }`,
    `run() { id=$1; shift`,
    `  while :; do`,
    `    if out=$("$@" 2>&1); then printf '%s\\tok\\t%s\\n' "$id" "$(printf '%s' "$out" | tidy)" > "$dir/$id"; return; fi`,
    `    if [ $(date +%s) -ge $end ]; then printf '%s\\tfail\\t%s\\n' "$id" "$(printf '%s' "$out" | tidy)" > "$dir/$id"; return; fi`,
    "    sleep 1",
    "  done; }",
    ...checks.map((c) => `${checkLine(c)} &`),
    "wait",
    `cat "$dir"/* > /dev/termination-log 2>/dev/null || true`,
    `cat "$dir"/*`,
  ].join("\n");
}

const IDS = new Set<string>([
  "pod-to-remote-pod",
  "pod-to-service",
  "remote-pod-to-pod",
  "remote-pod-to-reflected-service",
  "node-to-remote-pod",
  "path-mtu",
  "remote-path-mtu",
  "tcp-bulk",
  "remote-tcp-bulk",
  "pod-to-peer-pod",
  "peer-pod-to-pod",
  "peer-pod-to-reflected-service",
]);

/** Reads a probe's report; lines that are not results (a shell's complaint) are ignored. */
export function parseProbeReport(text: string): CheckResult[] {
  const out: CheckResult[] = [];
  for (const line of text.split("\n")) {
    const [id, verdict, ...rest] = line.split("\t");
    if (!id || !IDS.has(id) || (verdict !== "ok" && verdict !== "fail")) continue;
    out.push({ id: id as CheckId, ok: verdict === "ok", detail: rest.join(" ").trim() });
  }
  return out;
}

/** What the table calls each check. */
export const CHECK_TITLES: Record<CheckId, string> = {
  "pod-to-remote-pod": "local pod → remote pod",
  "pod-to-service": "local pod → Service (remote endpoint)",
  "remote-pod-to-pod": "remote pod → local pod",
  "remote-pod-to-reflected-service": "remote pod → reflected Service (local endpoint)",
  "node-to-remote-pod": "local node → remote pod",
  "path-mtu": "large packets local → remote (DF)",
  "remote-path-mtu": "large packets remote → local (DF)",
  "tcp-bulk": "TCP 1 MiB remote → local pod",
  "remote-tcp-bulk": "TCP 1 MiB local → remote pod",
  "pod-to-peer-pod": "local pod → a pod of the peer's own",
  "peer-pod-to-pod": "a pod of the peer's own → local pod behind no Service",
  "peer-pod-to-reflected-service": "a pod of the peer's own → reflected Service (local endpoint)",
};

/** What the test knows beyond the probes, to name a likely cause. */
export interface FabricFacts {
  /** How this cluster sees the peer's pods ("None": as they are). */
  remoteNatPodCidr: string;
  /** How the peer sees ours. */
  localNatPodCidr: string;
}

/** The likely cause of one failed check, given what else passed. */
export function likelyCause(failed: CheckResult, all: CheckResult[], facts: FabricFacts): string {
  const ok = (id: CheckId) => all.find((r) => r.id === id)?.ok;
  const remap =
    facts.remoteNatPodCidr !== "None" ? ` (the peer's pods are remapped to ${facts.remoteNatPodCidr} here)` : "";
  switch (failed.id) {
    case "pod-to-remote-pod":
      if (ok("node-to-remote-pod"))
        return "nodes reach the remote pod but pods do not: the pod's node does not forward it to liqo.vxlan (route agent on that node, kubectl -n liqo logs ds/liqo-route)";
      if (ok("remote-pod-to-pod"))
        return "one way only: the NAT on our gateway or the peer's (kubectl -n liqo logs deploy/liqo-gateway, both clusters)";
      return `nothing crosses the tunnel${remap}: the gateways (kubectl -n liqo get pods -l app.kubernetes.io/name=liqo-gateway, both clusters), the WireGuard endpoint (kubectl get tunnelendpoints -A) and the UDP port between the clusters`;
    case "remote-pod-to-pod":
      if (ok("pod-to-remote-pod"))
        return `one way only: the peer's route to our pods${facts.localNatPodCidr !== "None" ? ` (it sees them as ${facts.localNatPodCidr})` : ""} or the NAT on one of the gateways`;
      return "nothing crosses the tunnel from the peer: its gateway and route agents (kubectl -n liqo get pods on the peer)";
    case "pod-to-service":
      if (ok("pod-to-remote-pod"))
        return "the pod answers at its address but not through the Service: the local EndpointSlice of the offloaded pod (kubectl get endpointslices -n <ns>) or kube-proxy";
      return "the remote pod itself is unreachable (see local pod → remote pod)";
    case "remote-pod-to-reflected-service":
      if (ok("remote-pod-to-pod"))
        return "the peer reaches our pod but not through the reflected Service: EndpointSlice reflection or its address translation (kubectl get endpointslices in the peer's namespace)";
      return "the peer does not reach our pod at all (see remote pod → local pod)";
    case "node-to-remote-pod":
      if (ok("pod-to-remote-pod"))
        return "pods get through but the node does not: the node's route to the peer's pods via liqo.vxlan, or the gateway's return route to the node";
      return "the remote pod is unreachable (see local pod → remote pod)";
    case "path-mtu":
    case "remote-path-mtu":
      if (/black hole/.test(failed.detail))
        return "ICMP fragmentation-needed is dropped on the way: full-sized TCP segments will stall; allow ICMP type 3 code 4, or lower the pods' MTU to the path MTU";
      if (/no DF ping/.test(failed.detail))
        return `even ${MIN_PATH_MTU}-byte packets are lost: the MTU of liqo.wg or liqo.vxlan is below it, or the path drops ICMP altogether`;
      return "large packets do not cross: the tunnel MTU (liqo gateway --mtu) or the overlay's (liqo route --mtu)";
    case "tcp-bulk":
    case "remote-tcp-bulk":
      if (ok(failed.id === "tcp-bulk" ? "pod-to-remote-pod" : "remote-pod-to-pod"))
        return "small requests pass but a full-sized transfer does not: packets near the MTU are lost (see the large packets rows; MTU or PMTUD)";
      return "the pod is unreachable (see the pod rows above)";
    case "pod-to-peer-pod":
    case "peer-pod-to-pod":
      if (/lets it through/.test(failed.detail))
        return `the gateway ${failed.id === "pod-to-peer-pod" ? "of the peer" : "here"} does not enforce IntraClusterTrafficSegregation: its pods' --security-mode (kubectl -n liqo get deploy liqo-gateway -o yaml) and its nft table liqo-filter`;
      return failed.id === "pod-to-peer-pod"
        ? "the peer's pod is unreachable though its security mode allows it (see local pod → remote pod)"
        : "our pod is unreachable though our security mode allows it (see remote pod → local pod)";
    case "peer-pod-to-reflected-service":
      if (ok("remote-pod-to-reflected-service"))
        return "our offloaded pod reaches the Service but the peer's own pods do not: under IntraClusterTrafficSegregation the gateway here must let the peer reach the Service's endpoints (kubectl -n liqo logs deploy/liqo-gateway)";
      return "the reflected Service does not work at all (see remote pod → reflected Service)";
  }
}

export interface Row {
  check: string;
  result: "passed" | "FAILED" | "skipped";
  detail: string;
}

export function renderTable(rows: Row[]): string {
  const all = [{ check: "CHECK", result: "RESULT", detail: "DETAIL" } as const, ...rows];
  const w0 = Math.max(...all.map((r) => r.check.length));
  const w1 = Math.max(...all.map((r) => r.result.length));
  return all.map((r) => `${r.check.padEnd(w0 + 3)}${r.result.padEnd(w1 + 3)}${r.detail}`.trimEnd()).join("\n");
}
