// The IPAM persisted in the cluster's IpamStorage. Every change is made on a copy, written with
// the resourceVersion it was based on, and only then becomes the state the manager acts on
// ("write, then use"); a Conflict means another writer got there first, so the object is read
// again and the change re-applied to what it holds.
import {
  IpamStorageResource,
  IPAM_STORAGE_LABEL,
  parseIpamStorage,
  type IpamStorage,
} from "../../core/apis/net/ipamstorage.ts";
import type { KubeClient } from "../../core/kube/client.ts";
import { KubeApiError } from "../../core/kube/errors.ts";
import { silentLogger, type Logger } from "../../core/log.ts";
import { createIpam, IpamError, restoreIpam, type Ipam, type IpamOptions, type IpamSnapshot } from "../ipam/index.ts";
import { canonicalJson, ipamSpecFromSnapshot, snapshotFromIpamSpec } from "./ipam-storage.ts";

export const IPAM_STORAGE_NAME = "ipamstorage-liqo";

export interface IpamStoreOptions {
  client: KubeClient;
  /** The install-time networks; checked against what the IpamStorage records. */
  ipam: IpamOptions;
  logger?: Logger;
  /** How many Conflicts in a row one change survives before giving up. */
  maxConflicts?: number;
}

export interface IpamStore {
  /** The state last written (or read); what translations and controllers use. */
  readonly ipam: Ipam;
  readonly object: IpamStorage | undefined;
  readonly stats: { writes: number; conflicts: number };
  /** Reads (or creates) the IpamStorage; call once before anything else. */
  load(): Promise<void>;
  /** Applies `change` to a copy of the IPAM, writes it when it changed anything, then adopts it. */
  update<T>(what: string, change: (draft: Ipam) => T): Promise<T>;
  /** Persists changes made in place (endpoint addresses handed out by a translator). */
  flush(): Promise<void>;
  /** Called by in-place changers; schedules a flush. */
  noteInPlaceChange(replay: (ipam: Ipam) => void): void;
  onChange(listener: () => void): () => void;
}

function sameNetworks(a: IpamSnapshot, b: IpamSnapshot): string | undefined {
  if (a.podCidr !== b.podCidr) return `podCIDR ${a.podCidr} (configured: ${b.podCidr})`;
  if (a.serviceCidr !== b.serviceCidr) return `serviceCIDR ${a.serviceCidr} (configured: ${b.serviceCidr})`;
  if (canonicalJson([...a.reserved].sort()) !== canonicalJson([...b.reserved].sort()))
    return `reserved subnets ${a.reserved.join(",") || "(none)"} (configured: ${b.reserved.join(",") || "(none)"})`;
  return undefined;
}

export function createIpamStore(options: IpamStoreOptions): IpamStore {
  const { client } = options;
  const log = options.logger ?? silentLogger;
  const maxConflicts = options.maxConflicts ?? 20;
  const configured = createIpam(options.ipam);
  let current: Ipam = configured;
  let object: IpamStorage | undefined;
  let writtenSpec = "";
  let chain: Promise<unknown> = Promise.resolve();
  // In-place changes made while a write is in flight, re-applied to the state that write adopts.
  let replays: ((ipam: Ipam) => void)[] = [];
  let flushScheduled = false;
  const listeners = new Set<() => void>();
  const stats = { writes: 0, conflicts: 0 };

  const adopt = (obj: IpamStorage) => {
    const name = obj.metadata.name ?? IPAM_STORAGE_NAME;
    const snapshot = snapshotFromIpamSpec(obj.spec, name);
    object = obj;
    writtenSpec = canonicalJson(obj.spec);
    current = restoreIpam(snapshot);
  };

  async function read(): Promise<IpamStorage | undefined> {
    const list = await client.list<IpamStorage>(IpamStorageResource, {
      labelSelector: `${IPAM_STORAGE_LABEL.key}=${IPAM_STORAGE_LABEL.value}`,
    });
    if (list.items.length > 1) {
      const names = list.items.map((i) => i.metadata.name).join(", ");
      throw new IpamError(
        `found ${list.items.length} IpamStorage objects (${names}); a cluster has one, delete the extra ones`,
        "InvalidSnapshot",
        names,
      );
    }
    const raw = list.items[0];
    return raw && (parseIpamStorage(raw) as IpamStorage);
  }

  /** Writes `next`'s state; returns the stored object, or undefined on Conflict. */
  async function write(next: Ipam): Promise<IpamStorage | undefined> {
    const spec = ipamSpecFromSnapshot(next.snapshot());
    if (canonicalJson(spec) === writtenSpec && object) return object;
    try {
      const body = object
        ? { ...object, spec }
        : {
            apiVersion: "net.liqo.io/v1alpha1",
            kind: "IpamStorage",
            metadata: { name: IPAM_STORAGE_NAME, labels: { [IPAM_STORAGE_LABEL.key]: IPAM_STORAGE_LABEL.value } },
            spec,
          };
      const stored = object
        ? await client.replace<IpamStorage>(IpamStorageResource, body as IpamStorage)
        : await client.create<IpamStorage>(IpamStorageResource, body as IpamStorage);
      stats.writes++;
      return parseIpamStorage(stored) as IpamStorage;
    } catch (err) {
      if (err instanceof KubeApiError && (err.conflict || err.reason === "AlreadyExists")) {
        stats.conflicts++;
        return undefined;
      }
      throw err;
    }
  }

  function serialized<T>(run: () => Promise<T>): Promise<T> {
    const next = chain.then(run, run);
    chain = next.catch(() => {});
    return next;
  }

  async function reread() {
    const obj = await read();
    if (obj) adopt(obj);
    else {
      object = undefined;
      writtenSpec = "";
    }
  }

  const store: IpamStore = {
    get ipam() {
      return current;
    },
    get object() {
      return object;
    },
    stats,

    load: () =>
      serialized(async () => {
        const obj = await read();
        if (!obj) {
          const created = await write(configured);
          if (created) adopt(created);
          else await reread();
          log.info("IpamStorage created", { key: object?.metadata.name });
          return;
        }
        adopt(obj);
        const stored = current.snapshot();
        const mismatch = sameNetworks(stored, configured.snapshot());
        if (mismatch) {
          if (Object.keys(stored.clusters).length > 0) {
            throw new IpamError(
              `IpamStorage ${obj.metadata.name} records ${mismatch} while peerings use it; unpeer every cluster before changing ` +
                `the cluster's networks, or start the network manager with the recorded ones`,
              "OverlappingNetworks",
              obj.metadata.name ?? "",
            );
          }
          // No peer depends on the recorded networks yet: start over from the configured ones.
          log.warn("IpamStorage networks differ from the configuration and no peer uses them; resetting", {
            key: obj.metadata.name,
            recorded: mismatch,
          });
          const next = await write(configured);
          if (!next)
            throw new IpamError(
              `IpamStorage ${obj.metadata.name} changed while being reset; restart the network manager`,
              "InvalidSnapshot",
              obj.metadata.name ?? "",
            );
          adopt(next);
        }
        log.info("IpamStorage restored", {
          key: obj.metadata.name,
          peers: Object.keys(current.snapshot().clusters).length,
        });
      }),

    update<T>(what: string, change: (draft: Ipam) => T): Promise<T> {
      return serialized(async () => {
        for (let attempt = 0; ; attempt++) {
          const draft = restoreIpam(current.snapshot());
          const result = change(draft);
          const pending = replays;
          replays = [];
          const stored = await write(draft);
          if (stored) {
            adopt(stored);
            // Addresses a translator handed out meanwhile were made on the old state; keep them.
            for (const r of [...pending, ...replays]) r(current);
            if (pending.length || replays.length) void store.flush();
            replays = [];
            for (const l of listeners) l();
            return result;
          }
          replays = pending.concat(replays);
          if (attempt >= maxConflicts) {
            throw new IpamError(
              `IpamStorage ${object?.metadata.name ?? IPAM_STORAGE_NAME}: gave up "${what}" after ${attempt + 1} conflicting writes; is another network manager running?`,
              "InvalidSnapshot",
              what,
            );
          }
          log.info("IpamStorage changed underneath; re-reading", { key: object?.metadata.name, what });
          await reread();
        }
      });
    },

    flush() {
      flushScheduled = false;
      return store.update("persist endpoint addresses", () => undefined);
    },

    noteInPlaceChange(replay) {
      replays.push(replay);
      if (flushScheduled) return;
      flushScheduled = true;
      queueMicrotask(
        () => void store.flush().catch((err) => log.error("persisting endpoint addresses failed", { err })),
      );
    },

    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return store;
}
