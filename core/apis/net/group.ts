export const NET_GROUP = "net.liqo.io";

/** Liqo writes "None" in a NAT CIDR field when no remapping is needed (pkg/consts DefaultCIDRValue). */
export const NO_NAT_CIDR = "None";
