import { expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { allCrds } from "../../core/apis/crds.ts";
import { CliError } from "../errors.ts";
import { chartAppVersion, chartCrds, downgradeProblem, isLiqoGroup, refuseDowngrade } from "./crd-upgrade.ts";

const chart = resolve(import.meta.dir, "../../chart");

test("the chart's crds/ holds every CRD the code defines, as liqoctl applies them on an upgrade", () => {
  const names = chartCrds(chart).map((c) => c.metadata.name);
  expect(names.toSorted()).toEqual(allCrds.map((c) => c.metadata.name).toSorted());
});

test("chartCrds reads several documents per file, and refuses what is not a CRD", () => {
  const dir = mkdtempSync(join(tmpdir(), "crd-upgrade-"));
  mkdirSync(join(dir, "crds"));
  const crd = (n: string) =>
    `apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: ${n}\n`;
  writeFileSync(join(dir, "crds", "a.yaml"), `${crd("a.example.io")}---\n${crd("b.example.io")}---\n`);
  writeFileSync(join(dir, "crds", "notes.txt"), "not read");
  expect(chartCrds(dir).map((c) => c.metadata.name)).toEqual(["a.example.io", "b.example.io"]);
  writeFileSync(join(dir, "crds", "c.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n");
  expect(() => chartCrds(dir)).toThrow("c.yaml holds a ConfigMap where a CustomResourceDefinition was expected");
  expect(chartCrds(join(dir, "nothing-here"))).toEqual([]);
});

test("the chart's appVersion is package.json's version", async () => {
  const pkg = (await Bun.file(resolve(import.meta.dir, "../../package.json")).json()) as { version: string };
  expect(chartAppVersion(chart)).toBe(pkg.version);
});

test("a downgrade is refused, naming both versions and the way back; anything else passes", () => {
  const refused = downgradeProblem("0.2.0", "0.1.0", "liqo");
  expect(refused).toContain("liqo 0.2.0 is installed in namespace liqo and this liqoctl installs 0.1.0");
  expect(refused).toContain("helm rollback liqo -n liqo");
  expect(refused).toContain("nothing was changed");
  // A release's pre-release builds come before it; the released version after them.
  expect(downgradeProblem("0.2.0", "0.2.0-dev", "liqo")).toBeDefined();
  expect(downgradeProblem("0.2.0-rc.2", "0.2.0-rc.1", "liqo")).toBeDefined();
  for (const [installed, next] of [
    ["0.1.0", "0.2.0-dev"],
    ["0.2.0-dev", "0.2.0"],
    ["0.2.0", "0.2.0"],
    ["0.1.0", "0.10.0"],
    [undefined, "0.1.0"],
    ["0.3.0", undefined],
    ["custom-build", "0.1.0"],
    ["0.3.0", "main"],
  ] as const)
    expect(downgradeProblem(installed, next, "liqo")).toBeUndefined();
  expect(() => refuseDowngrade("1.0.0", "0.9.9", "liqo-system")).toThrow(CliError);
});

test("liqo's own API groups are the *.liqo.io ones; the MCS API's is another project's", () => {
  for (const g of ["discovery.liqo.io", "multicluster.liqo.io", "liqo.io"]) expect(isLiqoGroup(g)).toBe(true);
  for (const g of ["multicluster.x-k8s.io", "notliqo.io", "liqo.io.example.com"]) expect(isLiqoGroup(g)).toBe(false);
});
