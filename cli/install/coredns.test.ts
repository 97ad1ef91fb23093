import { describe, expect, test } from "bun:test";
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import {
  BEGIN_MARKER,
  clustersetBlock,
  configureClusterDns,
  corefileDigest,
  corefileProblem,
  END_MARKER,
  foreignClustersetBlock,
  hasReload,
  RESTART_ANNOTATION,
  unconfigureClusterDns,
  withClustersetBlock,
  withoutClustersetBlock,
} from "./coredns.ts";

const kubeadm = `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
`;

const edited = (corefile: string, ip = "10.96.0.77") => {
  const e = withClustersetBlock(corefile, ip);
  if (!e.ok) throw new Error(e.problem);
  return e;
};

describe("the Corefile edit", () => {
  test("a stock Corefile gets our block after its own, unchanged above", () => {
    const e = edited(kubeadm);
    expect(e.changed).toBe(true);
    expect(e.corefile.startsWith(kubeadm)).toBe(true);
    expect(e.corefile).toContain(
      `${BEGIN_MARKER}\nclusterset.local:53 {\n    errors\n    cache 5 {\n        denial 9984 1 1\n    }\n    forward . 10.96.0.77\n}\n${END_MARKER}\n`,
    );
    expect(corefileProblem(e.corefile)).toBeUndefined();
  });

  test("idempotent: a Corefile that already has our block is unchanged", () => {
    const once = edited(kubeadm).corefile;
    const twice = edited(once);
    expect(twice.changed).toBe(false);
    expect(twice.corefile).toBe(once);
  });

  test("our block with another IP (the Service recreated) is replaced, not doubled", () => {
    const old = edited(kubeadm, "10.96.0.5").corefile;
    const e = edited(old, "10.96.0.6");
    expect(e.changed).toBe(true);
    expect(e.corefile.split(BEGIN_MARKER).length).toBe(2);
    expect(e.corefile).toContain("forward . 10.96.0.6");
    expect(e.corefile).not.toContain("10.96.0.5");
  });

  test("a clusterset.local block the user wrote is not clobbered: refused, named", () => {
    for (const key of [
      "clusterset.local:53",
      "clusterset.local",
      "clusterset.local.:53",
      "dns://clusterset.local",
      "example.org clusterset.local:53",
    ]) {
      const mine = `${kubeadm}\n${key} {\n    forward . 10.1.1.1\n}\n`;
      expect(foreignClustersetBlock(mine)).toBe(true);
      const e = withClustersetBlock(mine, "10.96.0.77");
      expect(e.ok).toBe(false);
      expect(!e.ok && e.problem).toContain("clusterset.local server block that liqo did not write");
    }
  });

  test("clusterset.local inside a block (a plugin argument) or a comment is not a block of its own", () => {
    expect(foreignClustersetBlock(`${kubeadm}# clusterset.local:53 { }\n`)).toBe(false);
    expect(foreignClustersetBlock(".:53 {\n    rewrite name a.clusterset.local b.cluster.local\n}\n")).toBe(false);
    expect(foreignClustersetBlock("myclusterset.local:53 {\n    whoami\n}\n")).toBe(false);
    expect(foreignClustersetBlock(edited(kubeadm).corefile)).toBe(false);
  });

  test("empty, unbalanced or blockless Corefiles are left alone, with the reason", () => {
    const problems: [string, string][] = [
      ["", "empty"],
      ["   \n# only a comment\n", "empty"],
      [".:53 {\n    errors\n", "{ without its }"],
      [".:53 {\n}\n}\n", "} without its {"],
      ["errors\ncache 30\n", "no server block"],
    ];
    for (const [corefile, why] of problems) {
      const e = withClustersetBlock(corefile, "10.96.0.77");
      expect(e.ok).toBe(false);
      expect(!e.ok && e.problem).toContain(why);
    }
  });

  test("removing: the Corefile as it was before the install", () => {
    const back = withoutClustersetBlock(edited(kubeadm).corefile);
    expect(back.changed).toBe(true);
    expect(back.corefile).toBe(kubeadm);
    expect(withoutClustersetBlock(kubeadm)).toEqual({ corefile: kubeadm, changed: false });
  });

  test("removing our block between two others keeps both", () => {
    const tail = "example.org:53 {\n    whoami\n}\n";
    const mid = `${kubeadm}\n${clustersetBlock("10.96.0.1")}\n\n${tail}`;
    const out = withoutClustersetBlock(mid).corefile;
    expect(out).toBe(`${kubeadm}${tail}`);
    expect(corefileProblem(out)).toBeUndefined();
  });

  test("a begin marker whose end marker was deleted by hand: the block up to its brace goes", () => {
    const cut = `${kubeadm}\n${clustersetBlock("10.96.0.1").replace(`\n${END_MARKER}`, "")}\n`;
    expect(withoutClustersetBlock(cut).corefile).toBe(kubeadm);
  });

  test("reload: found as a plugin line, not in a comment", () => {
    expect(hasReload(kubeadm)).toBe(true);
    expect(hasReload(kubeadm.replace("    reload\n", ""))).toBe(false);
    expect(hasReload(kubeadm.replace("    reload\n", "    # reload\n"))).toBe(false);
    expect(hasReload(kubeadm.replace("    reload\n", "    reload 10s\n"))).toBe(true);
  });
});

/** An API server of three objects: what liqoctl reads and writes, and the writes it made. */
function fakeCluster(o: { corefile?: string; clusterIP?: string; deployment?: boolean; conflict?: boolean }) {
  const writes: { verb: string; name: string; body: unknown }[] = [];
  let corefile = o.corefile;
  const client = {
    find: async (res: { plural: string }, name: string, ns: string) => {
      if (res.plural === "services" && name === "liqo-clusterset-dns" && ns === "liqo" && o.clusterIP)
        return { metadata: { name }, spec: { clusterIP: o.clusterIP } };
      if (res.plural === "configmaps" && name === "coredns" && ns === "kube-system" && corefile !== undefined)
        return { metadata: { name, namespace: ns, resourceVersion: "7" }, data: { Corefile: corefile, other: "kept" } };
      if (res.plural === "deployments" && name === "coredns" && o.deployment) return { metadata: { name } };
      return undefined;
    },
    replace: async (
      _res: unknown,
      obj: { metadata: { name: string; resourceVersion?: string }; data: { Corefile: string; other: string } },
    ) => {
      if (o.conflict) throw new KubeApiError("conflict", 409, "Conflict", "kube-system/coredns");
      expect(obj.metadata.resourceVersion).toBe("7");
      expect(obj.data.other).toBe("kept");
      corefile = obj.data.Corefile;
      writes.push({ verb: "replace", name: obj.metadata.name, body: obj.data.Corefile });
      return obj;
    },
    mergePatch: async (_res: unknown, name: string, _ns: string, patch: unknown) => {
      writes.push({ verb: "patch", name, body: patch });
      return {};
    },
  } as unknown as KubeClient;
  return { client, writes, corefile: () => corefile };
}

describe("configureClusterDns and unconfigureClusterDns", () => {
  test("with reload: the block written, CoreDNS left to reload; again: nothing written; uninstall: the Corefile as before", async () => {
    const c = fakeCluster({ corefile: kubeadm, clusterIP: "10.96.0.77", deployment: true });
    const r = await configureClusterDns(c.client, "liqo");
    expect(r).toEqual({
      level: "info",
      message:
        "the cluster DNS (kube-system/coredns) forwards clusterset.local to liqo-clusterset-dns (10.96.0.77) (CoreDNS reloads it within a minute or two: its reload plugin)",
    });
    expect(c.writes.map((w) => w.verb)).toEqual(["replace"]);
    expect(c.corefile()).toContain("forward . 10.96.0.77");
    expect((await configureClusterDns(c.client, "liqo")).message).toBe(
      "the cluster DNS already forwards clusterset.local to 10.96.0.77",
    );
    expect(c.writes.length).toBe(1);
    expect(await unconfigureClusterDns(c.client)).toContain("no longer forwards clusterset.local");
    expect(c.corefile()).toBe(kubeadm);
    expect(await unconfigureClusterDns(c.client)).toBeUndefined();
  });

  test("without reload: the coredns Deployment restarted through its pod template", async () => {
    const c = fakeCluster({ corefile: kubeadm.replace("    reload\n", ""), clusterIP: "10.96.0.77", deployment: true });
    expect((await configureClusterDns(c.client, "liqo")).message).toContain("Deployment kube-system/coredns restarted");
    const patch = c.writes.find((w) => w.verb === "patch")!;
    expect(patch.name).toBe("coredns");
    expect(patch.body).toEqual({
      spec: { template: { metadata: { annotations: { [RESTART_ANNOTATION]: corefileDigest(c.corefile()!) } } } },
    });
  });

  test("without reload nor Deployment: written, and the user told to restart the DNS", async () => {
    const c = fakeCluster({ corefile: kubeadm.replace("    reload\n", ""), clusterIP: "10.96.0.77" });
    expect((await configureClusterDns(c.client, "liqo")).message).toContain("restart your cluster DNS");
  });

  test("no Corefile: a warning with the block to add by hand, nothing written", async () => {
    const c = fakeCluster({ clusterIP: "10.96.0.77", deployment: true });
    const r = await configureClusterDns(c.client, "liqo");
    expect(r.level).toBe("warn");
    expect(r.message).toContain("no Corefile in ConfigMap kube-system/coredns");
    expect(r.message).toContain(clustersetBlock("10.96.0.77"));
    expect(c.writes).toEqual([]);
  });

  test("a user's clusterset.local block: a warning, the Corefile untouched", async () => {
    const theirs = `${kubeadm}\nclusterset.local:53 {\n    forward . 10.1.1.1\n}\n`;
    const c = fakeCluster({ corefile: theirs, clusterIP: "10.96.0.77", deployment: true });
    const r = await configureClusterDns(c.client, "liqo");
    expect(r.level).toBe("warn");
    expect(r.message).toContain("already has a clusterset.local server block that liqo did not write; left unchanged");
    expect(c.corefile()).toBe(theirs);
  });

  test("the DNS Service off (chart value): a warning naming the Service and the value", async () => {
    const r = await configureClusterDns(fakeCluster({ corefile: kubeadm }).client, "liqo");
    expect(r.level).toBe("warn");
    expect(r.message).toContain(
      "Service liqo/liqo-clusterset-dns has no ClusterIP (controllerManager.clustersetDns.enabled=false?)",
    );
  });

  test("a concurrent edit (409): an error naming the ConfigMap and the fix", async () => {
    const c = fakeCluster({ corefile: kubeadm, clusterIP: "10.96.0.77", conflict: true });
    await expect(configureClusterDns(c.client, "liqo")).rejects.toThrow(
      "ConfigMap kube-system/coredns changed while liqoctl edited it: run the command again",
    );
  });
});
