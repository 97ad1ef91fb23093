// Every kind this project serves (Liqo v0.5.4's, plus VirtualNode from Liqo 1.x), in one list (the order CRDs are printed in).
import { ForeignClusterKind } from "./discovery/foreigncluster.ts";
import { ResourceRequestKind } from "./discovery/resourcerequest.ts";
import { SearchDomainKind } from "./discovery/searchdomain.ts";
import { IpamStorageKind } from "./net/ipamstorage.ts";
import { NatMappingKind } from "./net/natmapping.ts";
import { NetworkConfigKind } from "./net/networkconfig.ts";
import { TunnelEndpointKind } from "./net/tunnelendpoint.ts";
import { NamespaceOffloadingKind } from "./offloading/namespaceoffloading.ts";
import { ResourceOfferKind } from "./sharing/resourceoffer.ts";
import { NamespaceMapKind } from "./virtualkubelet/namespacemap.ts";
import { ShadowPodKind } from "./virtualkubelet/shadowpod.ts";
import { VirtualNodeKind } from "./virtualkubelet/virtualnode.ts";
import { ExportedServiceKind } from "./multicluster/exportedservice.ts";
import { ServiceExportKind } from "./multicluster/serviceexport.ts";
import { ServiceImportKind } from "./multicluster/serviceimport.ts";

export const allKinds = [
  ForeignClusterKind,
  ResourceRequestKind,
  ResourceOfferKind,
  NamespaceOffloadingKind,
  NamespaceMapKind,
  ShadowPodKind,
  VirtualNodeKind,
  NetworkConfigKind,
  TunnelEndpointKind,
  NatMappingKind,
  IpamStorageKind,
  SearchDomainKind,
  ServiceExportKind,
  ServiceImportKind,
  ExportedServiceKind,
] as const;

/** The ResourceRef of a Liqo kind by apiVersion and kind, without a discovery request. */
export function liqoResource(apiVersion: string, kind: string) {
  return allKinds.find((k) => k.apiVersion === apiVersion && k.kind === kind)?.resource;
}
