// The request stream's bookkeeping: parsing what the client pod wrote, counting a window's
// failures and its longest outage, finding when the stream answered again.
import { describe, expect, test } from "bun:test";
import { killPod, parseStream, recoveredAt, summarize } from "./traffic.ts";

const stream = (codes: string, start = 1000, step = 200) =>
  [...codes].map((c, i) => ({ at: start + i * step, code: c === "." ? "200" : "000" }));

describe("the request stream", () => {
  test("lines of '<ms> <status>'; a half-written last line and junk are skipped", () => {
    expect(parseStream("1700000000000 200\n1700000000200 000\n\nnot a line\n1700000000400")).toEqual([
      { at: 1700000000000, code: "200" },
      { at: 1700000000200, code: "000" },
    ]);
  });

  test("a window's requests, failures and longest outage (first failure to next answer)", () => {
    const s = stream("...xx..xxxx..");
    expect(summarize(s, 0, 10_000)).toEqual({
      requests: 13,
      failed: 6,
      longestOutageSeconds: 0.8,
      longestOutageFrom: 2400,
    });
    // Only what started inside the window counts.
    expect(summarize(s, 1600, 2200)).toEqual({
      requests: 3,
      failed: 2,
      longestOutageSeconds: 0.4,
      longestOutageFrom: 1600,
    });
    expect(summarize(stream("....."), 0, 2000).longestOutageFrom).toBeUndefined();
  });

  test("an outage still running at the window's end lasts until that end", () => {
    expect(summarize(stream("..xxx"), 0, 2000)).toMatchObject({ longestOutageSeconds: 0.6, longestOutageFrom: 1400 });
  });

  test("recovered: the first of n answers in a row after the given time; never, if it has not", () => {
    const s = stream("xx...x....");
    expect(recoveredAt(s, 0, 3)).toBe(1400);
    expect(recoveredAt(s, 0, 4)).toBe(2200);
    expect(recoveredAt(s, 0, 5)).toBeUndefined();
    expect(recoveredAt(s, 2300, 2)).toBe(2400);
  });

  test("a pod with no cgroup on the given nodes: nothing is killed", () => {
    expect(killPod("00000000-0000-0000-0000-000000000000", ["no-such-node"])).toBe(0);
  });
});
