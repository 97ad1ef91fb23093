// How a component adds itself to a role's admin API: JSON views, sections of the status page
// that render those views, and routes of its own. The reflection engine ships one
// (core/roles/admin-views.ts); peerings, virtual nodes, offloaded namespaces, IPAM and tunnels
// add theirs the same way, and a role passes every extension it runs to createAdminApp.
import type { Hono } from "hono";
import type { AdminEnv } from "./auth.ts";

/** A JSON view of a role's state, e.g. the peerings it knows; gets the query string, returns JSON-able data. */
export type View = (request: { query: Record<string, string> }) => unknown | Promise<unknown>;

/** How one cell is shown on the status page; the JSON views always carry the raw number. */
export type ColumnFormat = "text" | "count" | "seconds" | "bytes" | "state";

export interface StatusColumn {
  /** Property of a row; dotted paths reach into nested objects ("metrics.p99Seconds"). */
  key: string;
  label: string;
  format?: ColumnFormat;
}

/** A table on the status page over the rows of one view. */
export interface StatusSection {
  title: string;
  /** The view the rows come from (must be one of the app's views). */
  view: string;
  columns: StatusColumn[];
  /** Turns the view's value into rows; by default the value itself when it is an array. */
  rows?: (data: unknown) => Record<string, unknown>[];
  /** Shown instead of an empty table. */
  empty?: string;
}

export interface AdminExtension {
  views?: Record<string, View>;
  status?: StatusSection[];
  /** Sub-apps mounted at a path prefix, e.g. {"/api/plugins": pluginsApp}; they get the app's auth and errors. */
  routes?: Record<string, Hono<AdminEnv>>;
  /** The largest request body one of the routes accepts; the server raises its limit to fit it. */
  maxRequestBodyBytes?: number;
}

/** Combines extensions; two extensions claiming the same view name or route path is a bug, so it throws. */
export function mergeExtensions(extensions: AdminExtension[]): Required<AdminExtension> {
  const merged: Required<AdminExtension> = { views: {}, status: [], routes: {}, maxRequestBodyBytes: 0 };
  for (const ext of extensions) {
    for (const [name, view] of Object.entries(ext.views ?? {})) {
      if (name in merged.views)
        throw new TypeError(
          `admin view ${JSON.stringify(name)} is offered twice; view names must be unique across components`,
        );
      merged.views[name] = view;
    }
    for (const [path, app] of Object.entries(ext.routes ?? {})) {
      if (!/^\/[a-z0-9/_-]*$/.test(path) || path.endsWith("/"))
        throw new TypeError(`admin route prefix ${JSON.stringify(path)} must look like /api/things`);
      if (path in merged.routes) throw new TypeError(`admin route prefix ${path} is mounted twice`);
      merged.routes[path] = app;
    }
    merged.status.push(...(ext.status ?? []));
    merged.maxRequestBodyBytes = Math.max(merged.maxRequestBodyBytes, ext.maxRequestBodyBytes ?? 0);
  }
  return merged;
}
