import { afterEach, describe, expect, spyOn, test } from "bun:test";
import type { KubeClient } from "../core/kube/client.ts";
import type { ForeignClusterObject } from "../core/peering/foreigncluster/index.ts";
import { CliError } from "./errors.ts";
import { waitPhases, type Phase } from "./peering.ts";

const phases: Phase[] = [
  { type: "AuthenticationStatus", waiting: "Authenticating with cluster milan", done: "Authenticated" },
];

/** waitPhases only reads the ForeignCluster: a client answering one object is enough. */
function clientWith(fc: Partial<ForeignClusterObject>): KubeClient {
  return { find: async () => ({ metadata: { name: "milan", uid: "u1" }, spec: {}, ...fc }) } as unknown as KubeClient;
}

describe("waitPhases on a ForeignCluster no controller reconciles", () => {
  let warnedAt: number | undefined;
  const stderr = spyOn(process.stderr, "write").mockImplementation((chunk) => {
    if (String(chunk).includes("WARN")) warnedAt ??= Date.now();
    return true;
  });
  afterEach(() => {
    stderr.mockClear();
    warnedAt = undefined;
  });
  const written = () => stderr.mock.calls.map((c) => String(c[0])).join("");

  test("says early that no controller manager runs, and the timeout error says it too", async () => {
    const started = Date.now();
    const error = await waitPhases(clientWith({}), "milan", phases, 1_500, undefined, {
      hintAfterMs: 200,
      liqoNamespace: "liqo-x",
    }).catch((e) => e);
    expect(error).toBeInstanceOf(CliError);
    expect(error.message).toContain(
      "no liqo controller manager with the foreigncluster controller is running in this cluster",
    );
    expect(error.message).toContain("kubectl -n liqo-x get pods");
    const warning = written()
      .split("\n")
      .find((l) => l.includes("WARN"));
    expect(warning).toContain("ForeignCluster milan has no status after");
    // Said at the first poll past hintAfterMs (polls are 500 ms apart), well before the timeout.
    expect(warnedAt! - started).toBeLessThan(1_100);
  });

  test("a ForeignCluster with a status is being reconciled: no hint, the condition is named", async () => {
    const status = {
      peeringConditions: [
        { type: "AuthenticationStatus", status: "Pending", reason: "Waiting", message: "asking milan" },
      ],
    };
    const error = await waitPhases(clientWith({ status } as never), "milan", phases, 800, undefined, {
      hintAfterMs: 0,
    }).catch((e) => e);
    expect(error.message).toContain("it is Pending (Waiting): asking milan");
    expect(written()).not.toContain("WARN");
  });

  test("unpeering (waiting for the ForeignCluster to go) gives no hint", async () => {
    const error = await waitPhases(clientWith({}), "milan", [{ ...phases[0]!, until: [] }], 800, "u1", {
      hintAfterMs: 0,
    }).catch((e) => e);
    expect(error).toBeInstanceOf(CliError);
    expect(written()).not.toContain("WARN");
  });
});
