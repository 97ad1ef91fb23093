// Cache transforms (an informer's `transform` option): a controller keeps only what it reads, so
// caches of thousands of pods stay small. managedFields alone is often half of an object.
import type { KubeObject } from "./resources.ts";

export function withoutManagedFields<T extends KubeObject>(obj: T): T {
  if (!obj.metadata?.managedFields) return obj;
  const { managedFields: _, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

export function metadataOnly<T extends KubeObject>(obj: T): T {
  return { apiVersion: obj.apiVersion, kind: obj.kind, metadata: withoutManagedFields(obj).metadata } as T;
}
