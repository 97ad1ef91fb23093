// The registry a role declares its metrics in and the admin server scrapes. Declaration checks
// names eagerly; a scrape collects every metric concurrently and isolates failures, so one
// broken callback costs its own family and not the whole /metrics response.
import { silentLogger, type Logger } from "../log.ts";
import { createCallbackMetric, type CallbackOptions } from "./callback.ts";
import { renderPrometheusText } from "./exposition.ts";
import { createHistogram, type Histogram, type HistogramOptions } from "./histogram.ts";
import { createCounter, createGauge, type Counter, type Gauge, type MetricOptions } from "./instruments.ts";
import type { Collectable } from "./labels.ts";
import { assertLabelNames, assertMetricName, MetricDefinitionError } from "./names.ts";
import type { MetricFamily, Sample } from "./types.ts";

export interface RegistryOptions {
  logger?: Logger;
  /** Upper bound for one callback at scrape; a hung callback drops its family, not the scrape. */
  collectTimeoutMs?: number;
}

export interface Registry {
  counter<L extends string = never>(opts: MetricOptions<L>): Counter<L>;
  gauge<L extends string = never>(opts: MetricOptions<L>): Gauge<L>;
  histogram<L extends string = never>(opts: HistogramOptions<L>): Histogram<L>;
  /** A counter read from `collect` at every scrape (e.g. CPU seconds). */
  callbackCounter<L extends string = never>(opts: CallbackOptions<L>): void;
  /** A gauge read from `collect` at every scrape (e.g. queue depth). */
  callbackGauge<L extends string = never>(opts: CallbackOptions<L>): void;
  unregister(name: string): boolean;
  has(name: string): boolean;
  /** Families sorted by name; families without samples are left out. */
  collect(): Promise<MetricFamily[]>;
  /** The text exposition (format 0.0.4) of collect(). */
  expose(): Promise<string>;
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms}ms`)), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}

export function createRegistry(options: RegistryOptions = {}): Registry {
  const logger = options.logger ?? silentLogger;
  const timeoutMs = options.collectTimeoutMs ?? 5000;
  const metrics = new Map<string, Collectable>();
  // Every sample name in use, mapped to its family, so `x_count` cannot shadow histogram `x`.
  const sampleOwners = new Map<string, string>();

  const checkDeclaration = (type: string, opts: MetricOptions<string>, reserved: string[] = []) => {
    if (opts === null || typeof opts !== "object") throw new MetricDefinitionError(`${type}: options object required`);
    assertMetricName(opts.name);
    if (typeof opts.help !== "string" || opts.help.trim() === "") {
      throw new MetricDefinitionError(`metric ${opts.name}: help text required`);
    }
    // Enforced rather than advised: rate() over a name without _total is a common dashboard bug.
    if (type === "counter" && !opts.name.endsWith("_total")) {
      throw new MetricDefinitionError(`counter ${opts.name}: counter names must end in "_total"`);
    }
    assertLabelNames(opts.name, opts.labelNames ?? [], reserved);
  };

  const add = <T extends Collectable>(metric: T): T => {
    for (const sampleName of metric.sampleNames) {
      const owner = sampleOwners.get(sampleName);
      if (owner !== undefined) {
        throw new MetricDefinitionError(
          owner === metric.name
            ? `metric ${metric.name} is already registered`
            : `metric ${metric.name} would write samples named ${sampleName}, which ${owner} already writes`,
        );
      }
    }
    for (const sampleName of metric.sampleNames) sampleOwners.set(sampleName, metric.name);
    metrics.set(metric.name, metric);
    return metric;
  };

  const collectOne = async (metric: Collectable): Promise<Sample[] | undefined> => {
    try {
      const result = metric.collect();
      return result instanceof Promise ? await withTimeout(result, timeoutMs, `collecting ${metric.name}`) : result;
    } catch (err) {
      logger.warn("metric collection failed; family left out of this scrape", { metric: metric.name, err });
      return undefined;
    }
  };

  const registry: Registry = {
    counter(opts) {
      checkDeclaration("counter", opts);
      return add(createCounter(opts));
    },
    gauge(opts) {
      checkDeclaration("gauge", opts);
      return add(createGauge(opts));
    },
    histogram(opts) {
      checkDeclaration("histogram", opts, ["le"]);
      return add(createHistogram(opts));
    },
    callbackCounter(opts) {
      checkDeclaration("counter", opts);
      if (typeof opts.collect !== "function")
        throw new MetricDefinitionError(`metric ${opts.name}: collect function required`);
      add(createCallbackMetric("counter", opts));
    },
    callbackGauge(opts) {
      checkDeclaration("gauge", opts);
      if (typeof opts.collect !== "function")
        throw new MetricDefinitionError(`metric ${opts.name}: collect function required`);
      add(createCallbackMetric("gauge", opts));
    },
    unregister(name) {
      const metric = metrics.get(name);
      if (!metric) return false;
      for (const sampleName of metric.sampleNames) sampleOwners.delete(sampleName);
      return metrics.delete(name);
    },
    has: (name) => metrics.has(name),
    async collect() {
      const sorted = [...metrics.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      const results = await Promise.all(sorted.map(collectOne));
      const families: MetricFamily[] = [];
      sorted.forEach((metric, i) => {
        const samples = results[i];
        if (samples && samples.length > 0)
          families.push({ name: metric.name, help: metric.help, type: metric.type, samples });
      });
      return families;
    },
    async expose() {
      return renderPrometheusText(await registry.collect());
    },
  };
  return registry;
}
