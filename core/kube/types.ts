// The core kinds the code reads (Pod, Node, Service, Namespace), one type each, with the fields
// some part of liqo reads or writes. Every object stays open ([k: string]: unknown, as KubeObject):
// what a type does not name passes through untouched (reflection copies whole specs).
import type { Affinity } from "./node-affinity.ts";
import type { KubeObject } from "./resources.ts";

type Open = { [k: string]: unknown };
/** A quantity as the API server writes it ("100m", "1Gi") or as a test writes it (2). */
export type Quantities = Record<string, string | number>;

export interface Condition extends Open {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

export interface EnvVar extends Open {
  name: string;
  value?: string;
}

export interface VolumeMount extends Open {
  name: string;
  mountPath?: string;
}

/** name is optional for the partial objects tests and transforms build; the API server requires it. */
export interface Container extends Open {
  name?: string;
  image?: string;
  env?: EnvVar[];
  volumeMounts?: VolumeMount[];
  resources?: { requests?: Quantities; limits?: Quantities };
}

export interface Volume extends Open {
  name?: string;
  persistentVolumeClaim?: { claimName?: string; readOnly?: boolean };
  projected?: { defaultMode?: number; sources?: Record<string, unknown>[] };
}

export interface Toleration extends Open {
  key?: string;
  operator?: string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

export interface PodSpec extends Open {
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  containers?: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
  tolerations?: Toleration[];
  affinity?: Affinity;
  overhead?: Quantities;
}

export interface ContainerState {
  running?: { startedAt?: string } & Open;
  waiting?: { reason?: string; message?: string } & Open;
  terminated?: { exitCode?: number; reason?: string; message?: string } & Open;
}

export interface ContainerStatus extends Open {
  name?: string;
  ready?: boolean;
  restartCount?: number;
  state?: ContainerState;
}

export interface PodStatus extends Open {
  phase?: string;
  reason?: string;
  message?: string;
  podIP?: string;
  hostIP?: string;
  conditions?: Condition[];
  containerStatuses?: ContainerStatus[];
  initContainerStatuses?: ContainerStatus[];
}

export interface Pod extends KubeObject {
  spec?: PodSpec;
  status?: PodStatus;
}

export interface NodeAddress {
  type: string;
  address: string;
}

export interface Node extends KubeObject {
  spec?: { unschedulable?: boolean; taints?: { key: string; value?: string; effect: string }[] } & Open;
  status?: {
    addresses?: NodeAddress[];
    allocatable?: Quantities;
    capacity?: Quantities;
    conditions?: Condition[];
  } & Open;
}

export interface ServicePort extends Open {
  name?: string;
  port: number;
  nodePort?: number;
  protocol?: string;
  targetPort?: number | string;
}

export interface ServiceSpec extends Open {
  type?: string;
  clusterIP?: string;
  ports?: ServicePort[];
  selector?: Record<string, string>;
}

export interface Service extends KubeObject {
  spec?: ServiceSpec;
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string }[] } } & Open;
}

export interface Event extends KubeObject {
  involvedObject: { apiVersion?: string; kind?: string; namespace?: string; name?: string; uid?: string };
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  source?: { component?: string; host?: string };
  reportingComponent?: string;
  firstTimestamp?: string;
  lastTimestamp?: string;
}

export interface Namespace extends KubeObject {
  status?: { phase?: string } & Open;
}
