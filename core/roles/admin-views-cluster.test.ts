// The controller manager's status page renders names that peers chose (a ForeignCluster's
// clusterName comes from the remote cluster's identity): they must reach the page as text.
import { describe, expect, test } from "bun:test";
import { createAdminApp } from "../admin/index.ts";
import type { KubeClient } from "../kube/client.ts";
import { clusterViews } from "./admin-views-cluster.ts";

const hostile = "<img src=x onerror=alert(1)>";

/** Lists answer one ForeignCluster (the views ask for nothing else that matters here). */
const client = {
  list: async (res: { plural?: string }) => ({
    items:
      res.plural === "foreignclusters"
        ? [
            {
              metadata: { name: "milan" },
              spec: { clusterIdentity: { clusterID: `id-${hostile}`, clusterName: hostile } },
              status: { peeringConditions: [{ type: "OutgoingPeering", status: hostile }] },
            },
          ]
        : [],
  }),
} as unknown as KubeClient;

describe("status page with a hostile peer", () => {
  test("a cluster name with markup is escaped, in every cell it reaches", async () => {
    const app = createAdminApp({
      statusPage: { title: `controller-manager ${hostile}` },
      extensions: [clusterViews(client)],
    });
    const html = await (await app.request("/")).text();
    expect(html).toContain("<td>&lt;img src=x onerror=alert(1)&gt;</td>");
    expect(html).toContain("<td>id-&lt;img src=x onerror=alert(1)&gt;</td>");
    expect(html).toContain('<span class="badge other">&lt;img src=x onerror=alert(1)&gt;</span>');
    expect(html).toContain("<title>controller-manager &lt;img src=x onerror=alert(1)&gt;</title>");
    expect(html).not.toContain("<img");
  });
});
