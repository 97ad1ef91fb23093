// installCrds' failure reports, with a stand-in for the API server: what it says when a CRD never
// becomes Established or cannot be applied. The happy path runs on a real server in
// tests/e2e/crds.test.ts.
import { expect, test } from "bun:test";
import type { KubeClient } from "../kube/client.ts";
import { KubeApiError } from "../kube/errors.ts";
import { allCrds, CrdInstallError, installCrds } from "./crds.ts";

function fakeServer(options: {
  applyError?: KubeApiError;
  conditions?: { type: string; status: string; reason?: string; message?: string }[];
}) {
  const applied: string[] = [];
  const client = {
    async apply(_res: unknown, obj: { metadata: { name: string } }, opts: { fieldManager: string }) {
      if (options.applyError) throw options.applyError;
      applied.push(`${obj.metadata.name} by ${opts.fieldManager}`);
      return obj;
    },
    async get(_res: unknown, name: string) {
      return { metadata: { name }, status: { conditions: options.conditions ?? [] } };
    },
    resetDiscovery() {},
  };
  return { client: client as unknown as KubeClient, applied };
}

async function failure(p: Promise<unknown>): Promise<CrdInstallError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CrdInstallError);
  return err as CrdInstallError;
}

test("applies with the liqo field manager", async () => {
  const { client, applied } = fakeServer({ conditions: [{ type: "Established", status: "True" }] });
  await installCrds(client, { crds: allCrds.slice(0, 2) });
  expect(applied).toEqual(allCrds.slice(0, 2).map((c) => `${c.metadata.name} by liqo`));
});

test("a CRD that never becomes Established fails at the deadline, named, with its last condition", async () => {
  const { client } = fakeServer({
    conditions: [
      {
        type: "Established",
        status: "False",
        reason: "Installing",
        message: "the initial names have not been accepted",
      },
    ],
  });
  const started = Date.now();
  const err = await failure(installCrds(client, { crds: [allCrds[0]!], timeoutMs: 200, pollMs: 20 }));
  expect(Date.now() - started).toBeGreaterThanOrEqual(200);
  expect(err.crd).toBe(allCrds[0]!.metadata.name);
  expect(err.reason).toBe("Timeout");
  expect(err.message).toContain(
    "did not become Established in time; Established=False (Installing: the initial names have not been accepted)",
  );
});

test("refused names fail at once, with the server's reason", async () => {
  const { client } = fakeServer({
    conditions: [
      { type: "NamesAccepted", status: "False", reason: "ShortNamesConflict", message: '"offer" is already in use' },
    ],
  });
  const err = await failure(installCrds(client, { crds: [allCrds[2]!], timeoutMs: 60_000 }));
  expect(err.reason).toBe("ShortNamesConflict");
  expect(err.message).toContain(`CRD ${allCrds[2]!.metadata.name} was not accepted: "offer" is already in use`);
});

test("a forbidden apply says which rights are missing", async () => {
  const { client } = fakeServer({ applyError: new KubeApiError("PATCH x: forbidden", 403, "Forbidden", "x") });
  const err = await failure(installCrds(client, { crds: [allCrds[0]!] }));
  expect(err.reason).toBe("Forbidden");
  expect(err.message).toContain(`cannot apply CRD ${allCrds[0]!.metadata.name}`);
  expect(err.message).toContain("cluster-admin");
});
