// Printer columns several Liqo kinds share.
import type { PrinterColumn } from "./define.ts";

/** Liqo marks objects it replicates to a peer with liqo.io/replication; this column shows the mark. */
export const localColumn: PrinterColumn = {
  name: "Local",
  type: "string",
  jsonPath: ".metadata.labels.liqo\\.io/replication",
};
export const ageColumn: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };
