// SearchDomain (discovery.liqo.io/v1alpha1, cluster-scoped): WAN discovery. A DNS domain whose
// records list liqo clusters (PTR _liqo_auth._tcp.<domain>, then SRV and TXT per cluster, as
// core/discovery/service.ts describes); each becomes a ForeignCluster of discovery type WAN.
import * as v from "valibot";
import { ageColumn } from "../columns.ts";
import { defineKind } from "../define.ts";
import { text } from "../fields.ts";
import { DISCOVERY_GROUP } from "./identity.ts";

const DOMAIN = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]*[a-z0-9])?\.?$/;

export const SearchDomainSpecSchema = v.object({
  domain: v.pipe(
    v.string(),
    v.regex(DOMAIN, "must be a DNS domain such as clusters.example.com"),
    v.maxLength(253, "must be at most 253 characters"),
    v.description("The DNS domain whose records list the clusters to discover."),
  ),
  autojoin: v.optional(
    v.pipe(
      v.boolean(),
      v.description(
        "Whether the clusters found here are peered with by themselves (their auth tokens are still needed).",
      ),
    ),
    false,
  ),
});

export const SearchDomainStatusSchema = v.object({
  foreignClusters: v.optional(
    v.pipe(
      v.array(v.object({ name: text("The ForeignCluster's name."), clusterID: text("Its cluster ID.") })),
      v.description("The ForeignClusters found in the domain."),
    ),
  ),
  lastLookup: v.optional(text("When the domain was last read (RFC 3339).")),
  problem: v.optional(
    text("Why the last lookup failed or what in the records was ignored, and how to fix it; empty when all went well."),
  ),
});

export const SearchDomainKind = defineKind({
  group: DISCOVERY_GROUP,
  kind: "SearchDomain",
  plural: "searchdomains",
  scope: "Cluster",
  categories: ["liqo"],
  description: "A DNS domain where liqo clusters are listed for WAN discovery.",
  printerColumns: [
    { name: "Domain", type: "string", jsonPath: ".spec.domain" },
    { name: "Autojoin", type: "boolean", jsonPath: ".spec.autojoin" },
    ageColumn,
  ],
  spec: SearchDomainSpecSchema,
  status: SearchDomainStatusSchema,
});

export type SearchDomain = v.InferOutput<typeof SearchDomainKind.schema>;
export const SearchDomainResource = SearchDomainKind.resource;
export const SearchDomainCrd = SearchDomainKind.crd;
export const parseSearchDomain = SearchDomainKind.parse;
