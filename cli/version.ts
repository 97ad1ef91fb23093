// The version liqoctl and every `liqo` role report; the build may override it through the environment.
import pkg from "../package.json" with { type: "json" };

export const liqoVersion: string = pkg.version;
