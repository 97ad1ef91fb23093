// kubectl on one of a quick start's clusters (in-cluster or process mode), or with any kubeconfig:
// what it printed and its exit code, for tests and benches that check what a user would see.

export interface KubectlTarget {
  kubectl: string;
  kubeconfig: (cluster: string) => string;
}

export interface KubectlResult {
  out: string;
  err: string;
  code: number;
}

export function kubectlOn(t: KubectlTarget, cluster: string, ...args: string[]): Promise<KubectlResult> {
  return kubectlAt(t.kubectl, t.kubeconfig(cluster), ...args);
}

/** kubectl with one kubeconfig file: what it printed and its exit code. */
export async function kubectlAt(kubectl: string, kubeconfig: string, ...args: string[]): Promise<KubectlResult> {
  const { out, err, code } = await kubectlRun(kubectl, kubeconfig, args);
  return { out, err, code };
}

export interface KubectlOptions {
  /** What kubectl reads (exec -i); nothing by default. */
  stdin?: string;
  /** Kill kubectl past this: a hang is a failure with what it printed so far, not a stuck suite. */
  timeoutMs?: number;
}

/** The same, with input and a deadline; `killed` says the deadline (or a signal) ended it. */
export async function kubectlRun(
  kubectl: string,
  kubeconfig: string,
  args: string[],
  o: KubectlOptions = {},
): Promise<KubectlResult & { killed: boolean }> {
  const proc = Bun.spawn([kubectl, `--kubeconfig=${kubeconfig}`, ...args], {
    stdin: o.stdin === undefined ? "ignore" : new Blob([o.stdin]),
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = o.timeoutMs === undefined ? undefined : setTimeout(() => proc.kill(), o.timeoutMs);
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  const code = await proc.exited;
  clearTimeout(timer);
  return { out, err, code, killed: proc.signalCode !== null };
}

/** The same, for callers that only want the output: a failure throws with kubectl's message. */
export async function kubectlOut(t: KubectlTarget, cluster: string, ...args: string[]): Promise<string> {
  const r = await kubectlOn(t, cluster, ...args);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(" ")}: ${r.err}`);
  return r.out;
}
