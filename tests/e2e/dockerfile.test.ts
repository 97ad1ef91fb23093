// The image cannot be built here (no container engine), so the Dockerfile is checked against the
// repository instead: what it copies and runs exists and is not .dockerignored, the install step
// uses the lockfile the repository has, and the Bun and Node versions match package.json.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "../..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));

interface Instruction {
  op: string;
  args: string;
  line: number;
}

/** Instructions with line continuations joined and comments dropped. */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = "";
  let start = 0;
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (!pending && (!line || line.startsWith("#"))) return;
    if (!pending) start = i + 1;
    if (line.startsWith("#")) return; // a comment inside a continued RUN
    pending += (pending ? " " : "") + line.replace(/\\$/, "").trim();
    if (line.endsWith("\\")) return;
    const [op, ...rest] = pending.split(/\s+/);
    out.push({ op: op!.toUpperCase(), args: rest.join(" "), line: start });
    pending = "";
  });
  return out;
}

function ignored(path: string): boolean {
  const patterns = readFileSync(join(root, ".dockerignore"), "utf8")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  return patterns.some((p) => new Bun.Glob(p).match(path) || path.startsWith(`${p}/`));
}

/** Everything wrong with a Dockerfile, as messages naming the line; empty when consistent. */
export function checkDockerfile(text: string): string[] {
  const problems: string[] = [];
  const steps = parseDockerfile(text);
  const copied = new Set<string>();
  let installedWithLock = false;
  for (const s of steps) {
    const at = `Dockerfile:${s.line} ${s.op} ${s.args}`;
    if (s.op === "FROM") {
      const image = s.args.split(/\s+/)[0]!;
      const bun = image.match(/^oven\/bun:(\d+\.\d+\.\d+)/);
      if (image.startsWith("oven/bun") && bun?.[1] !== pkg.devDependencies.bun) {
        problems.push(
          `${at}: the Bun image must be oven/bun:${pkg.devDependencies.bun} (package.json devDependencies.bun)`,
        );
      }
      const node = image.match(/^node:(\d+)/);
      // lockfileVersion 3 needs npm >= 7, i.e. Node >= 16 images; the rig's scripts use Node 20.
      if (image.startsWith("node:") && (!node || Number(node[1]) < 16 || lock.lockfileVersion !== 3)) {
        problems.push(
          `${at}: a node image with npm >= 7 (node:16 or later) is needed for package-lock.json v${lock.lockfileVersion}`,
        );
      }
    }
    if (s.op === "COPY" && !s.args.startsWith("--from")) {
      const parts = s.args.split(/\s+/).filter((p) => !p.startsWith("--"));
      for (const src of parts.slice(0, -1)) {
        if (src === ".") continue;
        if (!existsSync(join(root, src))) problems.push(`${at}: ${src} does not exist in the repository`);
        else if (ignored(src)) problems.push(`${at}: ${src} is excluded by .dockerignore`);
        copied.add(src);
      }
      if (parts.includes(".")) copied.add(".");
    }
    if (s.op === "RUN") {
      if (
        /bun install[^&]*--frozen-lockfile/.test(s.args) &&
        !["bun.lock", "bun.lockb"].some((f) => existsSync(join(root, f)))
      ) {
        problems.push(
          `${at}: --frozen-lockfile needs bun.lock, but the repository locks with package-lock.json; use npm ci`,
        );
      }
      if (/\bnpm ci\b/.test(s.args)) {
        if (!copied.has("package-lock.json")) problems.push(`${at}: npm ci runs before package-lock.json is copied`);
        installedWithLock = true;
      }
    }
    if (["RUN", "ENTRYPOINT", "CMD"].includes(s.op)) {
      // Scripts the step runs from the checkout must exist (and be copied before it runs).
      for (const [file] of s.args.matchAll(/(?<![\w/.-])(?:[\w-]+\/)+[\w.-]+\.(?:ts|js|sh)\b/g)) {
        if (!existsSync(join(root, file))) problems.push(`${at}: ${file} does not exist in the repository`);
        else if (s.op === "RUN" && !copied.has(".") && !copied.has(file))
          problems.push(`${at}: ${file} is not copied before this step`);
      }
    }
  }
  if (!installedWithLock)
    problems.push("Dockerfile: no `npm ci` step installs the locked dependencies (package-lock.json)");
  if (!steps.some((s) => s.op === "FROM" && s.args.startsWith(`oven/bun:${pkg.devDependencies.bun}`))) {
    problems.push(`Dockerfile: the runtime stage must be oven/bun:${pkg.devDependencies.bun}`);
  }
  return problems;
}

describe("Dockerfile", () => {
  const text = readFileSync(join(root, "Dockerfile"), "utf8");

  test("is consistent with the repository: files, lockfile, Bun and Node versions", () => {
    expect(checkDockerfile(text)).toEqual([]);
    // The runtime Bun is the one the tests run on.
    const installed = JSON.parse(readFileSync(join(root, "node_modules/bun/package.json"), "utf8")).version;
    expect(installed).toBe(pkg.devDependencies.bun);
    expect(lock.packages["node_modules/bun"].version).toBe(pkg.devDependencies.bun);
  });

  test("the image tag the chart runs by default is this version", () => {
    const chart = Bun.YAML.parse(readFileSync(join(root, "chart/Chart.yaml"), "utf8")) as { appVersion: string };
    expect(chart.appVersion).toBe(pkg.version);
    expect(text).toContain(`ghcr.io/liqo-bun/liqo:${pkg.version}`);
  });

  test("wrong Dockerfiles are reported, naming the line and the fix", () => {
    const old =
      "FROM oven/bun:1.4.5-debian AS build\nCOPY package.json package-lock.json bunfig.toml ./\nRUN bun install --frozen-lockfile\n";
    expect(checkDockerfile(old).join("\n")).toMatch(/Dockerfile:3 RUN .*needs bun\.lock.*use npm ci/);
    const bad = [
      "FROM node:14-slim AS build",
      "COPY package.json yarn.lock ./",
      "RUN npm ci",
      "RUN node_modules/.bin/bun scripts/missing.ts",
      "COPY dist/x ./",
      "FROM oven/bun:1.0.0",
      'ENTRYPOINT ["bun", "cli/nothere.ts"]',
    ].join("\n");
    const problems = checkDockerfile(bad).join("\n");
    expect(problems).toContain("Dockerfile:1 FROM node:14-slim AS build: a node image with npm >= 7");
    expect(problems).toContain("yarn.lock does not exist");
    expect(problems).toContain("Dockerfile:3 RUN npm ci: npm ci runs before package-lock.json is copied");
    expect(problems).toContain("scripts/missing.ts does not exist");
    expect(problems).toContain("dist/x does not exist");
    expect(problems).toContain(`must be oven/bun:${pkg.devDependencies.bun}`);
    expect(problems).toContain("cli/nothere.ts does not exist");
  });

  test("a continued RUN with comments parses as one instruction", () => {
    const steps = parseDockerfile("FROM a\n# c\nRUN one \\\n # inner\n && two\nUSER 1\n");
    expect(steps.map((s) => [s.op, s.args, s.line])).toEqual([
      ["FROM", "a", 1],
      ["RUN", "one && two", 3],
      ["USER", "1", 6],
    ]);
  });
});
