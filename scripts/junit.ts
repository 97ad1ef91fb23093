// bun test's JUnit report, read: per-file times and failures.

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
