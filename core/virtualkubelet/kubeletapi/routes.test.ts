import { describe, expect, test } from "bun:test";
import { execRequestFromQuery, expectedStreams } from "./exec.ts";
import { remoteLogQuery, validateLogQuery } from "./logs.ts";
import { parseRoute } from "./server.ts";

describe("parseRoute", () => {
  test("containerLogs", () =>
    expect(parseRoute("/containerLogs/ns/pod/c")).toEqual({
      kind: "logs",
      namespace: "ns",
      pod: "pod",
      container: "c",
    }));
  test("exec", () => expect(parseRoute("/exec/ns/pod/c")?.kind).toBe("exec"));
  test("run", () => expect(parseRoute("/run/ns/pod/c")?.kind).toBe("run"));
  test("a missing container is no route", () => expect(parseRoute("/containerLogs/ns/pod")).toBeUndefined());
});

describe("remoteLogQuery", () => {
  test("passes kubelet's options through", () =>
    expect(remoteLogQuery(new URLSearchParams("follow=true&tailLines=5&timestamps=true"), "app").toString()).toBe(
      "container=app&follow=true&tailLines=5&timestamps=true",
    ));
  test("maps the legacy tail", () =>
    expect(remoteLogQuery(new URLSearchParams("tail=3"), "app").get("tailLines")).toBe("3"));
  test("tail=all means no limit", () =>
    expect(remoteLogQuery(new URLSearchParams("tail=all"), "app").has("tailLines")).toBe(false));
  test("drops unknown parameters", () =>
    expect(remoteLogQuery(new URLSearchParams("evil=1"), "app").has("evil")).toBe(false));
});

describe("validateLogQuery", () => {
  test("a non-numeric tailLines", () =>
    expect(validateLogQuery(new URLSearchParams("tailLines=x"))).toContain("tailLines"));
  test("a bad sinceTime", () =>
    expect(validateLogQuery(new URLSearchParams("sinceTime=yesterday"))).toContain("RFC 3339"));
  test("good input", () =>
    expect(validateLogQuery(new URLSearchParams("tailLines=10&sinceSeconds=5"))).toBeUndefined());
});

describe("exec streams", () => {
  test("kubelet's flags", () =>
    expect(execRequestFromQuery("c", new URLSearchParams("command=ls&command=-l&output=1&error=1"))).toEqual({
      container: "c",
      command: ["ls", "-l"],
      stdin: false,
      stdout: true,
      stderr: true,
      tty: false,
    }));
  test("error, stdout and stderr without a tty", () =>
    expect(
      expectedStreams({ container: "c", command: ["x"], stdin: false, stdout: true, stderr: true, tty: false }),
    ).toEqual(["error", "stdout", "stderr"]));
  test("a tty has resize and no stderr", () =>
    expect(
      expectedStreams({ container: "c", command: ["x"], stdin: true, stdout: true, stderr: true, tty: true }),
    ).toEqual(["error", "stdin", "stdout", "resize"]));
});

describe("portForward routes", () => {
  test("with or without the pod UID", () => {
    expect(parseRoute("/portForward/ns/pod")).toEqual({
      kind: "portForward",
      namespace: "ns",
      pod: "pod",
      container: "",
    });
    expect(parseRoute("/portForward/ns/pod/0b0e-uid")).toMatchObject({ kind: "portForward", pod: "pod" });
  });
});
