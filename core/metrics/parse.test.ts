import { describe, expect, test } from "bun:test";
import { parsePrometheusText, PrometheusParseError } from "./index.ts";

describe("parsePrometheusText accepts", () => {
  test("an empty exposition", () => {
    expect(parsePrometheusText("")).toEqual([]);
  });

  test("untyped samples, plain comments, blanks around labels and a trailing comma", () => {
    const text = '# just a comment\nup 1\nhttp_requests_total { code = "200" , } 1027 1395066363000\n\n';
    expect(parsePrometheusText(text)).toEqual([
      { name: "up", type: "untyped", samples: [{ name: "up", labels: {}, value: 1 }] },
      {
        name: "http_requests_total",
        type: "untyped",
        samples: [{ name: "http_requests_total", labels: { code: "200" }, value: 1027, timestampMs: 1395066363000 }],
      },
    ]);
  });

  test("a summary with quantiles", () => {
    const text = [
      "# TYPE rpc_seconds summary",
      'rpc_seconds{quantile="0.5"} 0.2',
      'rpc_seconds{quantile="0.99"} 1.5',
      "rpc_seconds_sum 40",
      "rpc_seconds_count 100",
      "",
    ].join("\n");
    const [family] = parsePrometheusText(text);
    expect(family!.type).toBe("summary");
    expect(family!.samples).toHaveLength(4);
  });

  test("float spellings Go writes", () => {
    const text = "a 1e+06\nb -Inf\nc nan\nd .5\ne +3\n";
    expect(parsePrometheusText(text).map((f) => f.samples[0]!.value)).toEqual([1e6, -Infinity, NaN, 0.5, 3]);
  });
});

describe("parsePrometheusText rejects", () => {
  const bad: [string, string, RegExp][] = [
    ["a missing final line feed", "up 1", /must end with a line feed/],
    ["CRLF line endings", "up 1\r\n", /carriage return/],
    ["a bad metric name", "liqo-x 1\n", /line 1: unexpected character "-" after metric name liqo/],
    ["a bad label name", 'up{a-b="1"} 1\n', /invalid label name "a-b"/],
    ["a reserved label name", 'up{__name__="x"} 1\n', /invalid label name "__name__"/],
    ["a duplicate label", 'up{a="1",a="2"} 1\n', /label a appears twice/],
    ["an unknown escape in a label value", 'up{a="\\t"} 1\n', /invalid escape sequence "\\t" in label value/],
    ["an unknown escape in HELP", "# HELP up a \\q\nup 1\n", /invalid escape sequence "\\q" in HELP text/],
    ["an unterminated label value", 'up{a="1} 1\n', /unterminated label value/],
    ["an unquoted label value", "up{a=1} 1\n", /expected '"' to open the value of label a/],
    ["a missing comma", 'up{a="1" b="2"} 1\n', /expected "," or "}"/],
    ["a missing value", "up\n", /sample up has no value/],
    ["a non-numeric value", "up one\n", /invalid value "one"/],
    ["a hex value", "up 0x10\n", /invalid value "0x10"/],
    ["a fractional timestamp", "up 1 1.5\n", /invalid timestamp "1.5"/],
    ["trailing garbage", "up 1 2 3\n", /unexpected text after the timestamp/],
    ["an unknown TYPE", "# TYPE up meter\nup 1\n", /unknown metric type "meter"/],
    ["a second TYPE", "# TYPE up gauge\n# TYPE up gauge\nup 1\n", /line 2: second TYPE line for up/],
    ["a second HELP", "# HELP up a\n# HELP up b\nup 1\n", /second HELP line for up/],
    ["TYPE after samples", "up 1\n# TYPE up gauge\n", /TYPE line for up after its samples/],
    ["a non-contiguous family", 'a 1\nb 1\na{x="1"} 2\n', /line 3: sample for a after its family ended/],
    ["a duplicate series", 'up{a="1"} 1\nup{a="1"} 2\n', /duplicate sample/],
    ["a negative counter", "# TYPE c_total counter\nc_total -1\n", /must not be negative/],
    ["a bucket without le", "# TYPE h histogram\nh_bucket 1\nh_sum 1\nh_count 1\n", /bucket without an "le" label/],
    ["a bad le", '# TYPE h histogram\nh_bucket{le="x"} 1\n', /invalid "le" value "x"/],
    [
      "a histogram without +Inf",
      '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n',
      /has no le="\+Inf" bucket/,
    ],
    [
      "non-cumulative buckets",
      '# TYPE h histogram\nh_bucket{le="1"} 5\nh_bucket{le="2"} 3\nh_bucket{le="+Inf"} 5\nh_sum 1\nh_count 5\n',
      /not cumulative at le=2/,
    ],
    [
      "_count disagreeing with +Inf",
      '# TYPE h histogram\nh_bucket{le="+Inf"} 5\nh_sum 1\nh_count 4\n',
      /_count 4 differs from the \+Inf bucket 5/,
    ],
    ["a histogram without _sum", '# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_count 1\n', /lacks h_count or h_sum/],
    ["a quantile outside [0,1]", '# TYPE s summary\ns{quantile="2"} 1\n', /invalid quantile "2"/],
  ];
  for (const [what, text, message] of bad) {
    test(what, () => {
      const run = () => parsePrometheusText(text);
      expect(run).toThrow(PrometheusParseError);
      expect(run).toThrow(message);
    });
  }

  test("errors carry the line number", () => {
    try {
      parsePrometheusText("ok 1\nok_two 2\nbad{ 3\n");
      throw new Error("parser accepted bad input");
    } catch (err) {
      expect(err).toBeInstanceOf(PrometheusParseError);
      expect((err as PrometheusParseError).line).toBe(3);
    }
  });
});
