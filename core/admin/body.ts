// Reading an upload with a size cap. The declared length is checked before anything is read,
// and a chunked body is counted as it streams, so an oversized upload costs at most the cap.
import { ProblemError } from "./problem.ts";

function tooLarge(what: string, maxBytes: number, got: string): ProblemError {
  return new ProblemError({
    status: 413,
    reason: "TooLarge",
    detail: `${what} is ${got}; the limit is ${maxBytes} bytes`,
    extra: { limitBytes: maxBytes },
  });
}

/** The request body as bytes, or a 413 `TooLarge` problem (400 `Invalid` when empty). */
export async function readBodyLimited(request: Request, maxBytes: number, what: string): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && /^\d+$/.test(declared) && Number(declared) > maxBytes)
    throw tooLarge(what, maxBytes, `${declared} bytes`);
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        throw tooLarge(what, maxBytes, `more than ${maxBytes} bytes`);
      }
      chunks.push(value);
    }
  }
  if (size === 0)
    throw new ProblemError({
      status: 400,
      reason: "Invalid",
      detail: `${what} is empty; send the bytes as the request body`,
    });
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
