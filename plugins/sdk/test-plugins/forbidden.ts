// Test fixture: a well-formed plugin that asks for kinds no peer may be granted (ServiceAccounts:
// identities; Roles: rights). liqoctl refuses to install it, and a provider refuses it when a
// consumer lists it anyway (a ConfigMap made by hand), with the reason in the request's status.
import { reflector, Input, Result, forwardGuards } from "../assembly";
export * from "../assembly/exports";

function forward(input: Input): Result {
  const guard = forwardGuards(input);
  if (guard != null) return guard;
  return Result.apply();
}

reflector(`{"abiVersion":1,"name":"forbidden","version":"0.0.1",
  "resources":[{"group":"","version":"v1","kind":"ServiceAccount","direction":"forward","fields":[]},
               {"group":"rbac.authorization.k8s.io","version":"v1","kind":"Role","direction":"forward","fields":[]}],
  "hostFunctions":[]}`, forward);
