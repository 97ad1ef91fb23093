// The status page's HTML, rendered on the server from the same data as the JSON views. Every
// value is escaped by Hono's html template (cluster names from peers, plugin names, reasons and
// files come from others); only this file's constants go in through raw(). The only script is a
// constant that re-fetches the page and swaps <main>, so live counters need no front-end build;
// its hash goes in the Content-Security-Policy, which allows nothing else.
import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import type { CheckResult } from "./readiness.ts";
import type { ColumnFormat, StatusColumn } from "./extensions.ts";

export interface RenderedSection {
  title: string;
  columns: StatusColumn[];
  rows: Record<string, unknown>[];
  error?: string;
  empty?: string;
}

export interface StatusModel {
  title: string;
  generatedAt: Date;
  refreshSeconds: number;
  health: { ready: boolean; checks: CheckResult[] };
  process: { rssBytes: number; cpuSeconds: number; uptimeSeconds: number };
  sections: RenderedSection[];
  views: string[];
}

type Html = HtmlEscapedString;

/** Hono's html tag answers a Promise only when a value is one; none here is. */
function h(strings: TemplateStringsArray, ...values: unknown[]): Html {
  return html(strings, ...values) as Html;
}

const REFRESH_SCRIPT = `(() => {
  const every = Number(document.body.dataset.refresh) * 1000;
  const tick = async () => {
    try {
      const res = await fetch(location.href, { headers: { accept: "text/html" }, cache: "no-store" });
      if (!res.ok) throw new Error(String(res.status));
      const next = new DOMParser().parseFromString(await res.text(), "text/html").querySelector("main");
      if (next) document.querySelector("main").replaceWith(next);
      document.body.classList.remove("stale");
    } catch {
      document.body.classList.add("stale");
    }
  };
  if (every > 0) setInterval(tick, every);
})();`;

const SCRIPT_HASH = `sha256-${new Bun.CryptoHasher("sha256").update(REFRESH_SCRIPT).digest("base64")}`;

export const STATUS_PAGE_CSP = [
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  `script-src '${SCRIPT_HASH}'`,
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d2430;background:#f5f6f8}
header{background:#1d3557;color:#fff;padding:12px 24px;display:flex;justify-content:space-between;align-items:baseline}
header h1{font-size:18px;margin:0}
body.stale header::after{content:"not refreshing: the API does not answer";color:#ffb4a8}
main{padding:8px 24px 24px}
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;margin:16px 0;padding:8px 16px 12px}
h2{font-size:15px;margin:6px 0 8px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:4px 10px 4px 0;border-bottom:1px solid #eef0f3;vertical-align:top}
th{font-weight:600;color:#4a5566}
td.num{font-variant-numeric:tabular-nums;text-align:right}
th.num{text-align:right}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600}
.good{background:#d8f3dc;color:#1b5e20}.bad{background:#ffe0dc;color:#a4161a}.other{background:#e9ecef;color:#495057}
.error{color:#a4161a}.muted{color:#6c757d}
.facts{display:flex;gap:24px;flex-wrap:wrap}.facts div{min-width:120px}.facts b{display:block;font-size:18px}
footer{padding:0 24px 16px;color:#6c757d;font-size:12px}
a{color:#1d3557}`;

const GOOD = new Set(["ready", "ok", "true", "running", "established", "loaded", "synced", "connected", "success"]);
const BAD = new Set([
  "quarantined",
  "error",
  "failed",
  "false",
  "closed",
  "rejected",
  "not ready",
  "notready",
  "allfailed",
  "somefailed",
  "denied",
]);

function read(row: Record<string, unknown>, key: string): unknown {
  let value: unknown = row;
  for (const part of key.split(".")) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

export function formatSeconds(s: number): string {
  if (s < 0.001) return `${(s * 1e6).toFixed(0)} µs`;
  if (s < 1) return `${(s * 1e3).toFixed(s < 0.01 ? 2 : 1)} ms`;
  return `${s.toFixed(2)} s`;
}

function formatBytes(b: number): string {
  if (b >= 1 << 30) return `${(b / (1 << 30)).toFixed(2)} GiB`;
  if (b >= 1 << 20) return `${(b / (1 << 20)).toFixed(1)} MiB`;
  return `${(b / 1024).toFixed(1)} KiB`;
}

function badge(value: string): Html {
  const tone = GOOD.has(value.toLowerCase()) ? "good" : BAD.has(value.toLowerCase()) ? "bad" : "other";
  return h`<span class="badge ${tone}">${value}</span>`;
}

function isNumeric(format: ColumnFormat | undefined): boolean {
  return format === "count" || format === "seconds" || format === "bytes";
}

/** A value as text: objects as JSON, the rest as String() does. */
function text(value: unknown): string {
  return typeof value === "object" && value !== null ? JSON.stringify(value) : String(value);
}

function cell(value: unknown, format: ColumnFormat = "text"): Html | string {
  if (value === undefined || value === null || value === "") return h`<span class="muted">–</span>`;
  if (typeof value === "number" && Number.isFinite(value)) {
    if (format === "seconds") return formatSeconds(value);
    if (format === "bytes") return formatBytes(value);
    if (format === "count") return value.toLocaleString("en-US");
  }
  if (format === "state") return badge(String(value));
  if (Array.isArray(value)) return h`${value.map((v, i) => (i ? h`<br>${text(v)}` : text(v)))}`;
  return text(value);
}

const numClass = (format: ColumnFormat | undefined) => (isNumeric(format) ? raw(' class="num"') : "");

function renderTable(section: RenderedSection): Html {
  const head = section.columns.map((c) => h`<th${numClass(c.format)}>${c.label}</th>`);
  const body = section.rows.map(
    (row) =>
      h`<tr>${section.columns.map((c) => h`<td${numClass(c.format)}>${cell(read(row, c.key), c.format)}</td>`)}</tr>\n`,
  );
  return h`<table><thead><tr>${head}</tr></thead><tbody>\n${body}</tbody></table>`;
}

function renderSection(section: RenderedSection): Html {
  const id = section.title.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  const inner = section.error
    ? h`<p class="error">could not read this section: ${section.error}</p>`
    : section.rows.length === 0
      ? h`<p class="muted">${section.empty ?? "none"}</p>`
      : renderTable(section);
  return h`<section id="${id}"><h2>${section.title} <span class="muted">(${section.rows.length})</span></h2>${inner}</section>\n`;
}

function renderHealth(model: StatusModel): Html {
  const checks = model.health.checks.map((c) => ({
    name: c.name,
    state: c.ok ? "ok" : "failed",
    reason: c.reason ?? "",
    durationSeconds: c.durationMs / 1000,
  }));
  const facts: [string, Html | string][] = [
    ["readiness", badge(model.health.ready ? "ready" : "not ready")],
    ["resident memory", formatBytes(model.process.rssBytes)],
    ["CPU time", formatSeconds(model.process.cpuSeconds)],
    ["uptime", formatSeconds(model.process.uptimeSeconds)],
  ];
  const table =
    checks.length === 0
      ? h`<p class="muted">no readiness checks registered</p>`
      : renderTable({
          title: "checks",
          rows: checks,
          columns: [
            { key: "name", label: "check" },
            { key: "state", label: "state", format: "state" },
            { key: "reason", label: "reason" },
            { key: "durationSeconds", label: "took", format: "seconds" },
          ],
        });
  return h`<section id="health"><h2>Health</h2><div class="facts">${facts.map(([label, value]) => h`<div>${label}<b>${value}</b></div>`)}</div>${table}</section>`;
}

export function renderStatusPage(model: StatusModel): string {
  const links = [
    ...model.views.map((v) => h`<a href="views/${encodeURIComponent(v)}">${v}</a>`),
    h`<a href="metrics">metrics</a>`,
    h`<a href="readyz?verbose">readyz</a>`,
  ].map((link, i) => (i ? h` · ${link}` : link));
  const refreshed = model.refreshSeconds > 0 ? h`, refreshed every ${model.refreshSeconds} s` : "";
  return h`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${model.title}</title>
<noscript><meta http-equiv="refresh" content="${Math.max(1, model.refreshSeconds)}"></noscript>
<style>${raw(STYLE)}</style></head>
<body data-refresh="${model.refreshSeconds}">
<header><h1>${model.title}</h1></header>
<main>
<p class="muted">as of ${model.generatedAt.toISOString()}${refreshed}</p>
${renderHealth(model)}
${model.sections.map(renderSection)}</main>
<footer>JSON: ${links}</footer>
<script>${raw(REFRESH_SCRIPT)}</script>
</body></html>`.toString();
}
