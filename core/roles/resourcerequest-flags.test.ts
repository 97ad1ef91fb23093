import { expect, test } from "bun:test";
import { join } from "node:path";
import { CliError } from "../cli-errors.ts";
import { sharingPercentageFlag } from "./resourcerequest-flags.ts";

const base = { "cluster-id": "id", "cluster-name": "milan" };

test("the default is 50 and a decimal is fine", () => {
  expect(sharingPercentageFlag(base)).toBe(50);
  expect(sharingPercentageFlag({ ...base, "sharing-percentage": "12.5" })).toBe(12.5);
});

test.each(["-1", "101", "abc"])("--sharing-percentage %s is a CLI error naming the flag", (v) => {
  expect(() => sharingPercentageFlag({ ...base, "sharing-percentage": v })).toThrow(CliError);
  expect(() => sharingPercentageFlag({ ...base, "sharing-percentage": v })).toThrow(
    /--sharing-percentage .* from 0 to 100/,
  );
});

test("liqo controller-manager exits 2 with the message before contacting any cluster", async () => {
  const proc = Bun.spawn(
    [
      process.execPath,
      join(import.meta.dir, "../../cli/liqo.ts"),
      "controller-manager",
      "--cluster-id",
      "x",
      "--cluster-name",
      "y",
      "--controllers",
      "resourcerequest",
      "--sharing-percentage=101",
      "--kubeconfig",
      "/nonexistent",
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const out = (await new Response(proc.stdout).text()) + (await new Response(proc.stderr).text());
  expect(out).toContain('--sharing-percentage "101" is not a percentage');
  expect(await proc.exited).toBe(2);
});
