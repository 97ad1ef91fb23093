import { expect, test } from "bun:test";
import { createLogger } from "./log.ts";

const capture = (level?: "debug" | "info" | "warn" | "error") => {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger(
    { role: "test" },
    { level, write: (l) => lines.push(JSON.parse(l)), now: () => new Date("2026-11-26T00:00:00Z") },
  );
  return { log, lines };
};

test("a record: time, level, message, the logger's fields and the call's; errors as name and message", () => {
  const { log, lines } = capture();
  log.child({ controller: "shadowpod" }).warn("pod creation refused", { key: "ns/p", err: new Error("forbidden") });
  expect(lines).toEqual([
    {
      ts: "2026-11-26T00:00:00.000Z",
      level: "warn",
      msg: "pod creation refused",
      role: "test",
      controller: "shadowpod",
      key: "ns/p",
      err: { name: "Error", message: "forbidden" },
    },
  ]);
});

test("a field named like the record's own keys cannot hide them: it is kept as field.<name>", () => {
  const { log, lines } = capture();
  log.info("pod security", { level: "baseline", msg: "x", ts: 1 });
  expect(lines[0]).toMatchObject({ level: "info", msg: "pod security", "field.level": "baseline", "field.msg": "x" });
  expect(lines[0]!.ts).toBe("2026-11-26T00:00:00.000Z");
});

test("records below the level are dropped", () => {
  const { log, lines } = capture("warn");
  log.info("quiet");
  log.error("loud");
  expect(lines.map((l) => l.msg)).toEqual(["loud"]);
});
