import { describe, expect, test } from "bun:test";
import { createAdminApp, createReadiness, type AdminExtension } from "./index.ts";
import { STATUS_PAGE_CSP } from "./status-page-html.ts";

const hostile = `<script>alert("x")</script>&'`;

function extension(): AdminExtension {
  return {
    views: {
      plugins: () => [
        {
          name: hostile,
          state: "quarantined",
          quarantineReason: "trap: <b>boom</b>",
          calls: 1234567,
          latency: { p99Seconds: 0.0042 },
        },
        { name: "configmaps", state: "ready", calls: 3, latency: { p99Seconds: 0.00002 } },
      ],
      peerings: () => ({ items: [{ clusterId: "milan" }] }),
      broken: () => {
        throw new Error("informer <not> started");
      },
      empty: () => [],
    },
    status: [
      {
        title: "Plugins",
        view: "plugins",
        columns: [
          { key: "name", label: "plugin" },
          { key: "state", label: "state", format: "state" },
          { key: "quarantineReason", label: "reason" },
          { key: "calls", label: "calls", format: "count" },
          { key: "latency.p99Seconds", label: "p99", format: "seconds" },
        ],
      },
      {
        title: "Peerings",
        view: "peerings",
        rows: (d) => (d as { items: Record<string, unknown>[] }).items,
        columns: [{ key: "clusterId", label: "cluster" }],
      },
      { title: "Broken", view: "broken", columns: [{ key: "x", label: "x" }] },
      { title: "Tunnels", view: "empty", empty: "no tunnel is up", columns: [{ key: "x", label: "x" }] },
    ],
  };
}

describe("status page", () => {
  const readiness = createReadiness();
  readiness.add("caches-synced", () => ({ ok: false, reason: "still <listing>" }));
  const app = createAdminApp({ readiness, statusPage: { title: "reflection <rome>" }, extensions: [extension()] });

  test("/ and /status serve the same HTML with a strict CSP and no caching", async () => {
    for (const path of ["/", "/status"]) {
      const res = await app.request(path);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toStartWith("text/html");
      expect(res.headers.get("content-security-policy")).toBe(STATUS_PAGE_CSP);
      expect(res.headers.get("cache-control")).toBe("no-store");
    }
    expect(STATUS_PAGE_CSP).toContain("default-src 'none'");
    expect(STATUS_PAGE_CSP).toMatch(/script-src 'sha256-[A-Za-z0-9+/]+=*'/);
  });

  test("every value from a view is escaped", async () => {
    const html = await (await app.request("/")).text();
    expect(html).not.toContain(hostile);
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;");
    expect(html).toContain("trap: &lt;b&gt;boom&lt;/b&gt;");
    expect(html).toContain("<title>reflection &lt;rome&gt;</title>");
    // The only <script> is the page's own refresh script.
    expect(html.match(/<script>/g)).toHaveLength(1);
  });

  test("counters, latencies and states are formatted for a person", async () => {
    const html = await (await app.request("/")).text();
    expect(html).toContain("1,234,567");
    expect(html).toContain("4.20 ms");
    expect(html).toContain("20 µs");
    expect(html).toContain('<span class="badge bad">quarantined</span>');
    expect(html).toContain('<span class="badge good">ready</span>');
  });

  test("health shows failing checks; a failing view costs only its section", async () => {
    const html = await (await app.request("/")).text();
    expect(html).toContain('<span class="badge bad">not ready</span>');
    expect(html).toContain("still &lt;listing&gt;");
    expect(html).toContain("could not read this section: informer &lt;not&gt; started");
    expect(html).toContain("no tunnel is up");
    expect(html).toContain("<td>milan</td>");
  });

  test("the page links every JSON view", async () => {
    const html = await (await app.request("/")).text();
    for (const v of ["plugins", "peerings", "broken", "empty"]) expect(html).toContain(`href="views/${v}"`);
  });

  test("statusPage: false leaves it out", async () => {
    const res = await createAdminApp({ statusPage: false }).request("/");
    expect(res.status).toBe(404);
  });

  test("a section over a view that is not a list says so instead of failing the page", async () => {
    const html = await (
      await createAdminApp({
        extensions: [
          {
            views: { one: () => ({ a: 1 }) },
            status: [
              { title: "One", view: "one", columns: [{ key: "a", label: "a" }] },
              { title: "Missing", view: "nope", columns: [] },
            ],
          },
        ],
      }).request("/")
    ).text();
    expect(html).toContain("view one did not return a list");
    expect(html).toContain("no view named nope");
  });
});
