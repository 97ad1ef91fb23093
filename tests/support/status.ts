// The HTTP status a Kubernetes call ends with: 200 when it succeeds, the API error's status
// otherwise (anything else is rethrown). For tests of what an identity may and may not do.
import { KubeApiError } from "../../core/kube/errors.ts";

export async function statusOf(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof KubeApiError) return err.status;
    throw err;
  }
}
