import { describe, expect, test } from "bun:test";
import type { KubeClient } from "../../core/kube/client.ts";
import type { Provider } from "./providers.ts";
import { detectAndDescribe } from "./run.ts";

/** A cluster whose kubeconfig names `server`, and a provider that detects both CIDRs and `apiServerUrl`. */
function setup(server: string, apiServerUrl?: string) {
  const client = {
    server,
    get: async () => ({ metadata: { uid: "uid-1" } }),
  } as unknown as KubeClient;
  const provider: Provider = {
    name: "generic",
    description: "",
    flags: {},
    detect: async () => ({
      podCIDR: "10.244.0.0/16",
      serviceCIDR: "10.96.0.0/12",
      apiServerUrl,
      clusterLabels: {},
      serviceType: "NodePort",
      notes: [],
    }),
  };
  return { client, provider };
}

describe("the API server URL peers are given", () => {
  test("nothing detected: the kubeconfig's server, when it is not loopback, with a note saying so", async () => {
    const { client, provider } = setup("https://192.168.10.5:6443/");
    const { detected } = await detectAndDescribe(client, provider, {}, false);
    expect(detected.apiServerUrl).toBe("https://192.168.10.5:6443");
    expect(detected.notes.join("\n")).toContain("API server https://192.168.10.5:6443: the kubeconfig's");
  });

  test("a loopback kubeconfig is never given to peers", async () => {
    for (const server of ["https://127.0.0.1:6443", "https://localhost:6443", "https://[::1]:6443"]) {
      const { client, provider } = setup(server);
      expect((await detectAndDescribe(client, provider, {}, false)).detected.apiServerUrl).toBeUndefined();
    }
  });

  test("what the provider detected, or --api-server-url, wins over the kubeconfig", async () => {
    const a = setup("https://192.168.10.5:6443", "https://cp.example.com:6443");
    expect((await detectAndDescribe(a.client, a.provider, {}, false)).detected.apiServerUrl).toBe(
      "https://cp.example.com:6443",
    );
    const b = setup("https://192.168.10.5:6443");
    const flagged = await detectAndDescribe(
      b.client,
      b.provider,
      { "api-server-url": "https://203.0.113.1:6443" },
      false,
    );
    expect(flagged.detected.apiServerUrl).toBeUndefined();
  });
});
