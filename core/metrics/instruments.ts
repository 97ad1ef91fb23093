// Counters and gauges that a role updates directly. Values live in a Map keyed by label values;
// an unlabelled metric starts at 0 so it is exported before its first update (an absent series
// and a zero look different to alerting rules).
import { resolveLabels, type Collectable } from "./labels.ts";
import { MetricDefinitionError } from "./names.ts";
import type { LabelValues, Sample } from "./types.ts";

export interface MetricOptions<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
}

export interface BoundCounter {
  inc(by?: number): void;
  get(): number;
}

export interface Counter<L extends string = never> {
  readonly name: string;
  inc(by?: number): void;
  inc(labels: LabelValues<L>, by?: number): void;
  get(labels?: LabelValues<L>): number;
  /** Resolves the label set once, for hot paths. */
  with(labels: LabelValues<L>): BoundCounter;
  /** Drops one series, e.g. when the peering it described is gone. */
  remove(labels: LabelValues<L>): boolean;
  reset(): void;
}

export interface BoundGauge {
  set(value: number): void;
  inc(by?: number): void;
  dec(by?: number): void;
  get(): number;
}

export interface Gauge<L extends string = never> {
  readonly name: string;
  set(value: number): void;
  set(labels: LabelValues<L>, value: number): void;
  inc(by?: number): void;
  inc(labels: LabelValues<L>, by?: number): void;
  dec(by?: number): void;
  dec(labels: LabelValues<L>, by?: number): void;
  get(labels?: LabelValues<L>): number;
  with(labels: LabelValues<L>): BoundGauge;
  remove(labels: LabelValues<L>): boolean;
  reset(): void;
}

interface Cell {
  labels: Record<string, string>;
  value: number;
}

/** Splits the `(labels?, number?)` overloads; a bare number means the unlabelled series. */
function splitArgs(args: unknown[]): [Record<string, unknown> | undefined, number | undefined] {
  if (typeof args[0] === "number") return [undefined, args[0]];
  return [args[0] as Record<string, unknown> | undefined, args[1] as number | undefined];
}

function assertNumber(metric: string, value: unknown): asserts value is number {
  if (typeof value !== "number")
    throw new MetricDefinitionError(`metric ${metric}: value must be a number, got ${typeof value}`);
}

/** Series storage shared by counters and gauges. */
class Cells {
  private readonly cells = new Map<string, Cell>();
  constructor(
    readonly name: string,
    readonly labelNames: readonly string[],
  ) {
    if (labelNames.length === 0) this.cells.set("", { labels: {}, value: 0 });
  }
  cell(labels: Record<string, unknown> | undefined): Cell {
    const resolved = resolveLabels(this.name, this.labelNames, labels);
    let cell = this.cells.get(resolved.key);
    if (!cell) {
      cell = { labels: resolved.labels, value: 0 };
      this.cells.set(resolved.key, cell);
    }
    return cell;
  }
  peek(labels: Record<string, unknown> | undefined): number {
    const resolved = resolveLabels(this.name, this.labelNames, labels);
    return this.cells.get(resolved.key)?.value ?? 0;
  }
  remove(labels: Record<string, unknown>): boolean {
    return this.cells.delete(resolveLabels(this.name, this.labelNames, labels).key);
  }
  reset(): void {
    this.cells.clear();
    if (this.labelNames.length === 0) this.cells.set("", { labels: {}, value: 0 });
  }
  samples(): Sample[] {
    return [...this.cells.values()].map((c) => ({ name: this.name, labels: { ...c.labels }, value: c.value }));
  }
}

function addToCounter(metric: string, cell: Cell, by: number | undefined): void {
  const amount = by ?? 1;
  assertNumber(metric, amount);
  // A counter only goes up; a negative or NaN step would read as a counter reset to rate().
  if (!(amount >= 0)) throw new RangeError(`counter ${metric}: increment must be >= 0, got ${amount}`);
  cell.value += amount;
}

export function createCounter<L extends string>(opts: MetricOptions<L>): Counter<L> & Collectable {
  const cells = new Cells(opts.name, opts.labelNames ?? []);
  return {
    name: opts.name,
    help: opts.help,
    type: "counter",
    sampleNames: [opts.name],
    inc(...args: unknown[]) {
      const [labels, by] = splitArgs(args);
      addToCounter(opts.name, cells.cell(labels), by);
    },
    get: (labels) => cells.peek(labels),
    with(labels) {
      const cell = cells.cell(labels);
      return { inc: (by) => addToCounter(opts.name, cell, by), get: () => cell.value };
    },
    remove: (labels) => cells.remove(labels),
    reset: () => cells.reset(),
    collect: () => cells.samples(),
  };
}

function boundGauge(metric: string, cell: Cell): BoundGauge {
  return {
    set(value) {
      assertNumber(metric, value);
      cell.value = value;
    },
    inc(by = 1) {
      assertNumber(metric, by);
      cell.value += by;
    },
    dec(by = 1) {
      assertNumber(metric, by);
      cell.value -= by;
    },
    get: () => cell.value,
  };
}

export function createGauge<L extends string>(opts: MetricOptions<L>): Gauge<L> & Collectable {
  const cells = new Cells(opts.name, opts.labelNames ?? []);
  const bound = (labels: Record<string, unknown> | undefined) => boundGauge(opts.name, cells.cell(labels));
  return {
    name: opts.name,
    help: opts.help,
    type: "gauge",
    sampleNames: [opts.name],
    set(...args: unknown[]) {
      const [labels, value] = splitArgs(args);
      // `set(labels)` without a value is a bug at the call site, not a request to set 0.
      if (value === undefined) throw new MetricDefinitionError(`gauge ${opts.name}: set() needs a value`);
      bound(labels).set(value);
    },
    inc(...args: unknown[]) {
      const [labels, by] = splitArgs(args);
      bound(labels).inc(by);
    },
    dec(...args: unknown[]) {
      const [labels, by] = splitArgs(args);
      bound(labels).dec(by);
    },
    get: (labels) => cells.peek(labels),
    with: (labels) => bound(labels),
    remove: (labels) => cells.remove(labels),
    reset: () => cells.reset(),
    collect: () => cells.samples(),
  };
}
