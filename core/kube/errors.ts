// Typed errors for everything that talks to a Kubernetes API server.

/** An error answered by the API server (a Status object), or a transport failure tied to an object. */
export class KubeApiError extends Error {
  override name = "KubeApiError";
  constructor(
    message: string,
    /** HTTP status; 0 when the server was never reached. */
    readonly status: number,
    /** The Status reason (NotFound, Conflict, AlreadyExists, Gone, Forbidden, …) or a transport reason. */
    readonly reason: string,
    /** The object's key, `namespace/name` or `name`, or the request path when there is no object. */
    readonly key: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
  get notFound() {
    return this.status === 404;
  }
  get conflict() {
    return this.status === 409;
  }
  get gone() {
    return this.status === 410;
  }
}

/** A kubeconfig that cannot be used: missing file, missing context, malformed content. */
export class KubeConfigError extends Error {
  override name = "KubeConfigError";
}

export interface StatusBody {
  kind?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
}

const reasonByStatus: Record<number, string> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  409: "Conflict",
  410: "Gone",
  415: "UnsupportedMediaType",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

export function apiErrorFromStatus(
  httpStatus: number,
  body: StatusBody | undefined,
  key: string,
  verb: string,
): KubeApiError {
  const reason = body?.reason || reasonByStatus[httpStatus] || "Unknown";
  const detail = body?.message ?? `HTTP ${httpStatus}`;
  return new KubeApiError(`${verb} ${key}: ${detail} (${reason}, HTTP ${httpStatus})`, httpStatus, reason, key);
}

/** Classifies a fetch failure (no HTTP answer) into an error that says what to check. */
export function transportError(err: unknown, server: string, key: string, verb: string): KubeApiError {
  const e = err as { code?: string; message?: string };
  const code = e?.code ?? "";
  const text = `${code} ${e?.message ?? String(err)}`;
  let reason = "Unreachable";
  let hint = `is the API server at ${server} running and reachable? check --kubeconfig and --context`;
  if (/CERT|certificate|self.signed|UNABLE_TO_VERIFY|SELF_SIGNED|issuer/i.test(text)) {
    reason = "TLSVerificationFailed";
    hint = `the certificate of ${server} is not signed by the certificate-authority-data in the kubeconfig; use the kubeconfig written for this cluster`;
  } else if (/timed? ?out|ETIMEDOUT|TimeoutError/i.test(text)) {
    reason = "Timeout";
  } else if (/abort/i.test(text)) {
    reason = "Aborted";
    hint = "the request was cancelled";
  }
  return new KubeApiError(`${verb} ${key}: cannot reach ${server} (${text.trim()}); ${hint}`, 0, reason, key, {
    cause: err,
  });
}

/** A reconcile outcome that asks the work queue to try the key again after a delay. */
export class RetryAfterError extends Error {
  override name = "RetryAfterError";
  constructor(
    readonly delayMs: number,
    message = `retry after ${delayMs}ms`,
  ) {
    super(message);
  }
}
