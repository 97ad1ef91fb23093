// bun test's JUnit report, read: per-file and per-test times, and failures.

export interface JunitFailure {
  file: string;
  name: string;
  seconds: number;
  text: string;
}

/** Every failed testcase of a bun JUnit report: its file, its name (describe blocks joined by " > "), its message. */
export function junitFailures(report: string): JunitFailure[] {
  const out: JunitFailure[] = [];
  const re =
    /<testcase name="([^"]*)" classname="([^"]*)" time="([\d.]+)" file="([^"]*)"[^>]*>\s*<failure[^>]*>([\s\S]*?)<\/failure>/g;
  for (const m of report.matchAll(re)) {
    const [, name, classname, time, file, body] = m as unknown as string[];
    out.push({
      file: unescapeXml(file!),
      name: [classname, name]
        .filter(Boolean)
        .map((s) => unescapeXml(s!))
        .join(" > "),
      seconds: Number(time),
      text: unescapeXml(body!).trimEnd(),
    });
  }
  return out;
}

export function unescapeXml(s: string): string {
  return s
    .replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n)))
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

/** The test files of a report with their time, hooks included: the testsuites right under <testsuites> that carry a file. */
export function junitFiles(report: string): { file: string; seconds: number }[] {
  return [...report.matchAll(/^ {2}<testsuite name="[^"]*" file="([^"]+)"[^>]* time="([\d.]+)"/gm)].map((m) => ({
    file: unescapeXml(m[1]!),
    seconds: Number(m[2]),
  }));
}

/**
 * Every test that ran, with its file, name (describe blocks joined by " > ") and time (hooks not
 * included). Bun lists a failed hook as a testcase named "(unnamed)": that is a hook, not a test.
 */
export function junitTests(report: string): { file: string; name: string; seconds: number }[] {
  const re = /<testcase name="([^"]*)" classname="([^"]*)" time="([\d.]+)" file="([^"]*)"/g;
  return [...report.matchAll(re)]
    .filter((m) => m[1] !== "(unnamed)")
    .map((m) => ({
      file: unescapeXml(m[4]!),
      name: [m[2], m[1]]
        .filter(Boolean)
        .map((s) => unescapeXml(s!))
        .join(" > "),
      seconds: Number(m[3]),
    }));
}

/**
 * Where each file's time went: its tests, and the rest, which is its hooks (beforeAll: the clusters
 * it starts, liqo installed, peered; afterAll: torn down). The files that spend most outside their
 * tests first: what sharing clusters between files would save.
 */
export function hookTimes(report: string): { file: string; seconds: number; tests: number; hooks: number }[] {
  const inTests = new Map<string, number>();
  for (const t of junitTests(report)) inTests.set(t.file, (inTests.get(t.file) ?? 0) + t.seconds);
  return junitFiles(report)
    .map((f) => {
      const tests = inTests.get(f.file) ?? 0;
      return { file: f.file, seconds: f.seconds, tests, hooks: Math.max(0, f.seconds - tests) };
    })
    .sort((a, b) => b.hooks - a.hooks);
}
