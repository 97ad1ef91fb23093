// A pod that runs a shell script once with a claim mounted at /data, in the rig's workload image:
// how storage tests write data, check it and read it where the scheduler (or `placement`) puts it.
import type { KubeObject } from "../../core/kube/resources.ts";
import { rigImageRefs } from "../rig/images.ts";

export function claimScriptPod(o: {
  name: string;
  namespace: string;
  claim: string;
  script: string;
  /** More pod spec fields, e.g. { nodeSelector: { ... } }. */
  placement?: Record<string, unknown>;
}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: o.name, namespace: o.namespace },
    spec: {
      ...o.placement,
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 0,
      containers: [
        {
          name: "c",
          image: rigImageRefs.hello,
          imagePullPolicy: "IfNotPresent",
          command: ["sh", "-c", o.script],
          volumeMounts: [{ name: "d", mountPath: "/data" }],
        },
      ],
      volumes: [{ name: "d", persistentVolumeClaim: { claimName: o.claim } }],
    },
  } as KubeObject;
}
