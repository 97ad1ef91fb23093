// The in-cluster data plane with disjoint pod CIDRs (the quick start's own setup). See
// fabric-incluster.ts.
import { fabricSuite } from "./fabric-incluster.ts";

fabricSuite(false);
