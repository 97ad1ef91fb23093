// The status page at GET / and /status: readiness, process facts and one table per status
// section, each read from its view at request time. A view that fails costs its own section,
// never the page, so a person still sees what does work.
import type { Context } from "hono";
import type { Logger } from "../log.ts";
import type { StatusSection, View } from "./extensions.ts";
import type { Readiness } from "./readiness.ts";
import { renderStatusPage, STATUS_PAGE_CSP, type RenderedSection } from "./status-page-html.ts";

export interface StatusPageOptions {
  /** Shown as the page title, e.g. "liqo reflection rome → milan". */
  title?: string;
  /** Seconds between live refreshes; 0 turns them off (default 2). */
  refreshSeconds?: number;
}

interface Sources {
  title: string;
  refreshSeconds: number;
  sections: StatusSection[];
  views: Map<string, View>;
  readiness: Readiness;
  logger: Logger;
}

function toRows(section: StatusSection, data: unknown): Record<string, unknown>[] {
  if (section.rows) return section.rows(data);
  if (Array.isArray(data)) return data as Record<string, unknown>[];
  throw new Error(`view ${section.view} did not return a list; give the section a rows() function`);
}

async function renderOne(section: StatusSection, sources: Sources): Promise<RenderedSection> {
  const base = { title: section.title, columns: section.columns, empty: section.empty, rows: [] };
  const view = sources.views.get(section.view);
  if (!view) return { ...base, error: `no view named ${section.view}` };
  try {
    return { ...base, rows: toRows(section, await view({ query: {} })) };
  } catch (err) {
    sources.logger.warn("status page section failed", { section: section.title, err });
    return { ...base, error: err instanceof Error ? err.message : String(err) };
  }
}

export function createStatusPageHandler(sources: Sources) {
  return async (c: Context): Promise<Response> => {
    const [report, sections] = await Promise.all([
      sources.readiness.run({}),
      Promise.all(sources.sections.map((s) => renderOne(s, sources))),
    ]);
    const cpu = process.cpuUsage();
    const html = renderStatusPage({
      title: sources.title,
      generatedAt: new Date(),
      refreshSeconds: sources.refreshSeconds,
      health: { ready: report.ready, checks: report.checks },
      process: {
        rssBytes: process.memoryUsage.rss(),
        cpuSeconds: (cpu.user + cpu.system) / 1e6,
        uptimeSeconds: process.uptime(),
      },
      sections,
      views: [...sources.views.keys()].sort(),
    });
    return c.html(html, 200, {
      "cache-control": "no-store",
      "content-security-policy": STATUS_PAGE_CSP,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    });
  };
}
