// The API types of every Liqo v0.5 kind: types, parsers, CRDs, ResourceRefs and well-known labels.
export * from "./discovery/identity.ts";
export * from "./discovery/foreigncluster.ts";
export * from "./discovery/resourcerequest.ts";
export * from "./sharing/resourceoffer.ts";
export * from "./offloading/namespaceoffloading.ts";
export * from "./virtualkubelet/group.ts";
export * from "./virtualkubelet/namespacemap.ts";
export * from "./virtualkubelet/shadowpod.ts";
export * from "./net/group.ts";
export * from "./net/networkconfig.ts";
export * from "./net/tunnelendpoint.ts";
export * from "./net/natmapping.ts";
export * from "./net/ipamstorage.ts";
export * from "./labels.ts";
export { allKinds, liqoResource } from "./kinds.ts";
export { allCrds, installCrds, CrdInstallError, CRD_FIELD_MANAGER, type InstallCrdsOptions } from "./crds.ts";
export { VERSION, defineKind, type CustomResourceDefinition, type PrinterColumn } from "./define.ts";
export { InvalidObjectError, type FieldIssue } from "./validation.ts";
