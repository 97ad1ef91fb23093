// A namespace for a test's objects, created unless it is there already (a rerun or an earlier test
// in the file may have made it).
import type { KubeClient } from "../../core/kube/client.ts";
import { Resources } from "../../core/kube/resources.ts";

export async function namespace(client: KubeClient, name: string): Promise<void> {
  if (!(await client.find(Resources.namespaces, name)))
    await client.create(Resources.namespaces, { metadata: { name } });
}
