// Label-selector syntax (as kubectl's -l) parsed into node-selector requirements: one --selector
// becomes one node-selector term (its requirements ANDed); repeated --selector flags are ORed.
import { LabelSelectorError, parseLabelSelector, type LabelRequirement } from "../core/kube/label-selector.ts";
import { CliError } from "./errors.ts";

export type Requirement = LabelRequirement;

export function parseSelector(selector: string): Requirement[] {
  if (!selector.trim())
    throw new CliError("--selector '': an empty selector matches every cluster; omit --selector instead");
  try {
    return parseLabelSelector(selector);
  } catch (err) {
    if (err instanceof LabelSelectorError) throw new CliError(`--selector '${selector}': ${err.message}`);
    throw err;
  }
}

export function selectorTerms(selectors: string[]): { matchExpressions: Requirement[] }[] {
  return selectors.map((s) => ({ matchExpressions: parseSelector(s) }));
}
