// POST /run/{namespace}/{pod}/{container}?cmd=...: kubelet's one-shot command, answered with the
// command's combined output (500 with the output and the reason when it fails).
import type { ServerResponse } from "node:http";
import type { KubeClient } from "../../kube/client.ts";
import { startRemoteExec } from "./remote-exec.ts";
import { KubeletApiError, type RemotePodRef } from "./types.ts";

export async function serveRun(
  res: ServerResponse,
  remote: KubeClient,
  target: RemotePodRef,
  container: string,
  query: URLSearchParams,
): Promise<void> {
  const command = (query.get("cmd") ?? "").split(/\s+/).filter(Boolean);
  if (!command.length)
    throw new KubeletApiError(400, "run needs a command: cmd=<command and arguments, space-separated>");
  const chunks: Uint8Array[] = [];
  let status: { status?: string; message?: string } | undefined;
  const error = await new Promise<string | undefined>((done) => {
    startRemoteExec(
      remote,
      target,
      { container, command, stdin: false, stdout: true, stderr: true, tty: false },
      {
        stdout: (d) => chunks.push(d.slice()),
        stderr: (d) => chunks.push(d.slice()),
        status: (s) => {
          try {
            status = JSON.parse(new TextDecoder().decode(s));
          } catch {
            /* not JSON */
          }
        },
        end: done,
      },
    ).catch((err) => done((err as Error).message));
  });
  const output = Buffer.concat(chunks);
  if (error || (status && status.status !== "Success")) {
    res
      .writeHead(500, { "content-type": "text/plain" })
      .end(Buffer.concat([output, Buffer.from(`\n${error ?? status?.message ?? "the command failed"}\n`)]));
    return;
  }
  res.writeHead(200, { "content-type": "text/plain" }).end(output);
}
