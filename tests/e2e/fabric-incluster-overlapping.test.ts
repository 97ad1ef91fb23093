// The in-cluster data plane when rome and milan use the same pod CIDR (10.200.0.0/16): the case
// the network fabric's remapping and NAT exist for. See fabric-incluster.ts.
import { fabricSuite } from "./fabric-incluster.ts";

fabricSuite(true);
