export {
  createAuthServer,
  IDS_PATH,
  IDENTITY_PATH,
  CERT_IDENTITY_PATH,
  type AuthServer,
  type AuthServerOptions,
  type IdentityResponse,
} from "./server.ts";
export {
  ensureAuthToken,
  readAuthToken,
  generateAuthToken,
  tokensEqual,
  AUTH_TOKEN_SECRET,
  AUTH_TOKEN_KEY,
} from "./token.ts";
export { createFailureLimiter, type FailureLimiter, type FailureLimiterOptions } from "./rate-limit.ts";
export { parseIdentityRequest, type IdentityRequest } from "./request.ts";
export {
  issueIdentity,
  revokeIdentity,
  grantTwinNamespace,
  findTenantNamespace,
  IdentityConflictError,
  remoteServiceAccountName,
  remoteTokenSecretName,
  type IssuedIdentity,
  type RevokeOptions,
} from "./tenant.ts";
export {
  ensurePeeringRbac,
  PEERING_ROLE,
  TWIN_NAMESPACE_ROLE,
  TWIN_NAMESPACES_ROLE,
  TWIN_NAMESPACES_POLICY,
  peeringRules,
  twinNamespaceRules,
  twinNamespacesRules,
} from "./rbac.ts";
export { createTwinBinder, type TwinBinder } from "./twin-binder.ts";
export { peerKubeconfig } from "./kubeconfig.ts";
