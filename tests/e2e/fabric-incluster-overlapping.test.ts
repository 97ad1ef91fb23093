// The in-cluster data plane when rome and milan use the same pod CIDR (10.200.0.0/16): the case
// the network fabric's remapping and NAT exist for; liqo installed with --enable-ha, so the
// gateway failover goes to a standby. See fabric-incluster.ts.
import { fabricSuite } from "./fabric-incluster.ts";

fabricSuite(true, true);
