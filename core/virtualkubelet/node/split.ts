// How a provider's offer is shared between the virtual nodes of one peering: each VirtualNode
// takes what it asks, in creation order, and the peering's own node keeps what is left. A node
// that does not fit is refused before it exists; a node that already runs is never refused (that
// would evict its pods): when the offer shrinks it gets what is left, possibly less than it asked,
// as a real node whose capacity dropped keeps its pods but takes no new ones beyond it.
import { formatQuantity, parseQuantity, unitOf } from "../../kube/quantity.ts";
import type { NodeResources } from "./forge.ts";

export interface NodeAsk {
  name: string;
  asks: NodeResources;
  /** The node exists already (it is capped, never refused). */
  running: boolean;
}

export interface OfferSplit {
  /** What the peering's own node keeps. */
  rest: NodeResources;
  /** The capacity of each node that fits (or runs). */
  given: Map<string, NodeResources>;
  /** Why each node that does not fit was refused. */
  refused: Map<string, string>;
}

const show = (m: Map<string, bigint>) =>
  [...m].map(([k, v]) => `${k}=${formatQuantity(v, unitOf(k))}`).join(",") || "nothing";

export function splitOffer(offer: NodeResources, nodes: readonly NodeAsk[], offerName = "the offer"): OfferSplit {
  const left = new Map(Object.entries(offer).map(([k, v]) => [k, parseQuantity(v, k)]));
  const given = new Map<string, NodeResources>();
  const refused = new Map<string, string>();
  for (const n of nodes) {
    const asks = new Map(Object.entries(n.asks).map(([k, v]) => [k, parseQuantity(v, `${n.name}: ${k}`)]));
    if (!n.running) {
      const short = [...asks].filter(([k, v]) => v > (left.get(k) ?? 0n));
      if (short.length > 0) {
        refused.set(
          n.name,
          `asks ${show(new Map(short))} but ${show(new Map(short.map(([k]) => [k, left.get(k) ?? 0n])))} is left of ${offerName} (${show(new Map(Object.entries(offer).map(([k, v]) => [k, parseQuantity(v, k)])))})`,
        );
        continue;
      }
    }
    const share = new Map<string, bigint>();
    for (const [k, v] of asks) {
      const take = v < (left.get(k) ?? 0n) ? v : (left.get(k) ?? 0n);
      share.set(k, take);
      if (left.has(k)) left.set(k, left.get(k)! - take);
    }
    given.set(n.name, Object.fromEntries([...share].map(([k, v]) => [k, formatQuantity(v, unitOf(k))])));
  }
  return { rest: Object.fromEntries([...left].map(([k, v]) => [k, formatQuantity(v, unitOf(k))])), given, refused };
}
