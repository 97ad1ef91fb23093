// The status page's HTML, rendered on the server from the same data as the JSON views. Every
// value is escaped (plugin names, reasons and files come from users). The only script is a
// constant that re-fetches the page and swaps <main>, so live counters need no front-end build;
// its hash goes in the Content-Security-Policy, which allows nothing else.
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

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes text for HTML element content and quoted attribute values alike. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (ch) => ESCAPES[ch]!);
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
const BAD = new Set(["quarantined", "error", "failed", "false", "closed", "rejected", "not ready", "notready", "allfailed", "somefailed", "denied"]);

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

function badge(value: string): string {
  const tone = GOOD.has(value.toLowerCase()) ? "good" : BAD.has(value.toLowerCase()) ? "bad" : "other";
  return `<span class="badge ${tone}">${escapeHtml(value)}</span>`;
}

function isNumeric(format: ColumnFormat | undefined): boolean {
  return format === "count" || format === "seconds" || format === "bytes";
}

function cell(value: unknown, format: ColumnFormat = "text"): string {
  if (value === undefined || value === null || value === "") return `<span class="muted">–</span>`;
  if (typeof value === "number" && Number.isFinite(value)) {
    if (format === "seconds") return escapeHtml(formatSeconds(value));
    if (format === "bytes") return escapeHtml(formatBytes(value));
    if (format === "count") return escapeHtml(value.toLocaleString("en-US"));
  }
  if (format === "state") return badge(String(value));
  if (Array.isArray(value)) return value.map((v) => escapeHtml(typeof v === "object" ? JSON.stringify(v) : v)).join("<br>");
  return escapeHtml(typeof value === "object" ? JSON.stringify(value) : value);
}

function renderTable(section: RenderedSection): string {
  const head = section.columns.map((c) => `<th${isNumeric(c.format) ? ' class="num"' : ""}>${escapeHtml(c.label)}</th>`).join("");
  const body = section.rows
    .map((row) => `<tr>${section.columns.map((c) => `<td${isNumeric(c.format) ? ' class="num"' : ""}>${cell(read(row, c.key), c.format)}</td>`).join("")}</tr>`)
    .join("\n");
  return `<table><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}

function renderSection(section: RenderedSection): string {
  const id = section.title.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  let inner: string;
  if (section.error) inner = `<p class="error">could not read this section: ${escapeHtml(section.error)}</p>`;
  else if (section.rows.length === 0) inner = `<p class="muted">${escapeHtml(section.empty ?? "none")}</p>`;
  else inner = renderTable(section);
  return `<section id="${escapeHtml(id)}"><h2>${escapeHtml(section.title)} <span class="muted">(${section.rows.length})</span></h2>${inner}</section>`;
}

function renderHealth(model: StatusModel): string {
  const checks = model.health.checks.map((c) => ({ name: c.name, state: c.ok ? "ok" : "failed", reason: c.reason ?? "", durationSeconds: c.durationMs / 1000 }));
  const facts = [
    ["readiness", badge(model.health.ready ? "ready" : "not ready")],
    ["resident memory", escapeHtml(formatBytes(model.process.rssBytes))],
    ["CPU time", escapeHtml(formatSeconds(model.process.cpuSeconds))],
    ["uptime", escapeHtml(formatSeconds(model.process.uptimeSeconds))],
  ].map(([label, value]) => `<div>${escapeHtml(label)}<b>${value}</b></div>`).join("");
  const table = checks.length === 0 ? `<p class="muted">no readiness checks registered</p>` : renderTable({
    title: "checks", rows: checks,
    columns: [{ key: "name", label: "check" }, { key: "state", label: "state", format: "state" }, { key: "reason", label: "reason" }, { key: "durationSeconds", label: "took", format: "seconds" }],
  });
  return `<section id="health"><h2>Health</h2><div class="facts">${facts}</div>${table}</section>`;
}

export function renderStatusPage(model: StatusModel): string {
  const links = [...model.views.map((v) => `<a href="views/${encodeURIComponent(v)}">${escapeHtml(v)}</a>`), `<a href="metrics">metrics</a>`, `<a href="readyz?verbose">readyz</a>`].join(" · ");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(model.title)}</title>
<noscript><meta http-equiv="refresh" content="${Math.max(1, model.refreshSeconds)}"></noscript>
<style>${STYLE}</style></head>
<body data-refresh="${escapeHtml(model.refreshSeconds)}">
<header><h1>${escapeHtml(model.title)}</h1></header>
<main>
<p class="muted">as of ${escapeHtml(model.generatedAt.toISOString())}${model.refreshSeconds > 0 ? `, refreshed every ${escapeHtml(model.refreshSeconds)} s` : ""}</p>
${renderHealth(model)}
${model.sections.map(renderSection).join("\n")}
</main>
<footer>JSON: ${links}</footer>
<script>${REFRESH_SCRIPT}</script>
</body></html>`;
}
