// The CLI's typed errors live in core/cli-errors.ts (the roles throw them too); re-exported here
// so liqoctl's commands keep importing them from next door.
export { CliError, ExitCode } from "../core/cli-errors.ts";
