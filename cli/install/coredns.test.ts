import { describe, expect, test } from "bun:test";
import {
  BEGIN_MARKER,
  clustersetBlock,
  corefileProblem,
  END_MARKER,
  foreignClustersetBlock,
  hasReload,
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
      `${BEGIN_MARKER}\nclusterset.local:53 {\n    errors\n    cache 5\n    forward . 10.96.0.77\n}\n${END_MARKER}\n`,
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
