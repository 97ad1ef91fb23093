export const VIRTUALKUBELET_GROUP = "virtualkubelet.liqo.io";
