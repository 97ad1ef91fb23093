import { describe, expect, test } from "bun:test";
import { CATCH_UP_MS, NOTICE_MS, TruthCounter } from "./truth.ts";

/** Feeds one sample a second: [remote answered, Ready status] for each second. */
function feed(seconds: [boolean, string | undefined][]) {
  const c = new TruthCounter();
  seconds.forEach(([up, ready], i) => c.observe(i * 1000, up, ready));
  return c.t;
}
const repeat = <T>(n: number, x: T): T[] => Array.from({ length: n }, () => x);

describe("virtual node truth", () => {
  test("Ready while the remote answers, NotReady during a long outage: all true", () => {
    const t = feed([
      ...repeat<[boolean, string]>(10, [true, "True"]),
      ...repeat<[boolean, string]>(20, [false, "True"]),
      ...repeat<[boolean, string]>(40, [false, "False"]),
      ...repeat<[boolean, string]>(5, [true, "False"]),
      ...repeat<[boolean, string]>(10, [true, "True"]),
    ]);
    expect(t).toMatchObject({ samples: 85, notReady: 45, falseNotReady: 0, falseReady: 0 });
    expect(t.longestOutageS).toBe(59);
  });

  test("NotReady while the remote answers all along is untrue", () => {
    const t = feed([...repeat<[boolean, string]>(5, [true, "True"]), [true, "False"], [true, "Unknown"]]);
    expect(t.falseNotReady).toBe(2);
  });

  test("NotReady that lasts past the catch-up after the remote is back is untrue, not before", () => {
    const back = (NOTICE_MS + CATCH_UP_MS) / 1000;
    const t = feed([
      ...repeat<[boolean, string]>(40, [false, "False"]),
      ...repeat<[boolean, string]>(back + 3, [true, "False"]),
    ]);
    expect(t.falseNotReady).toBe(3);
  });

  test("Ready through an outage longer than the notice is untrue from then on", () => {
    const t = feed(repeat<[boolean, string]>(NOTICE_MS / 1000 + 6, [false, "True"]));
    expect(t.falseReady).toBe(5);
    expect(t.falseNotReady).toBe(0);
  });

  test("a sample the local API server could not answer is not counted", () => {
    const t = feed([
      [true, undefined],
      [false, undefined],
      [true, "True"],
    ]);
    expect(t).toMatchObject({ samples: 1, notReady: 0, falseNotReady: 0, falseReady: 0 });
  });
});
