// A ForeignCluster's peering condition of one type, if it has one yet (the ForeignCluster itself
// may not exist yet either).
import type { ForeignClusterObject } from "../../core/peering/foreigncluster/index.ts";

export const cond = (fc: ForeignClusterObject | undefined, type: string) =>
  fc?.status?.peeringConditions?.find((c) => c.type === type);
