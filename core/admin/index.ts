// Public surface of the admin HTTP base; roles import from here only.
export { createAdminApp, createHealthApp, type AdminApp, type AdminAppOptions, type View } from "./app.ts";
export {
  mergeExtensions,
  type AdminExtension,
  type StatusSection,
  type StatusColumn,
  type ColumnFormat,
} from "./extensions.ts";
export type { StatusPageOptions } from "./status-page.ts";
export { readBodyLimited } from "./body.ts";
export {
  startAdminServer,
  isLoopbackHost,
  type AdminServer,
  type AdminServerOptions,
  type AdminTlsOptions,
} from "./server.ts";
export {
  createReadiness,
  type Readiness,
  type ReadinessCheck,
  type ReadinessReport,
  type CheckResult,
  type CheckAnswer,
} from "./readiness.ts";
export {
  createAuthMiddleware,
  attachClientCertificate,
  CLIENT_CERT_WRITE_GROUP,
  type ClientCertificate,
  AdminConfigError,
  DEFAULT_OPEN_PATHS,
  type AdminAuthOptions,
  type AdminToken,
  type TokenRole,
  type Principal,
  type AdminEnv,
} from "./auth.ts";
export {
  ProblemError,
  problemResponse,
  parseInput,
  problemType,
  PROBLEM_CONTENT_TYPE,
  type ProblemInit,
} from "./problem.ts";
export { byLabel, sumCounter, summarizeHistogram, bucketQuantile, type LatencySummary } from "./metric-summary.ts";
export {
  kubeMetricsAuthorizer,
  createMetricsApp,
  METRICS_READER_CLUSTERROLE,
  type MetricsDecision,
  type MetricsAuthorizer,
  type KubeMetricsAuthorizerOptions,
} from "./secure-metrics.ts";
