// Typed plugin failures. `code` says whose fault it is: every code but "invalid-input"
// and "closed" quarantines the plugin, because a plugin that misbehaved once cannot be trusted
// with the next object either.
export type PluginErrorCode =
  | "trap" // the wasm code trapped (abort, unreachable, out-of-bounds)
  | "timeout" // the call ran past its time budget
  | "invalid-output" // the answer was not valid JSON or not a valid decision
  | "violation" // the answer targets another namespace/cluster or an object we do not own
  | "abi-mismatch" // the plugin speaks another ABI version
  | "invalid-manifest" // the manifest is malformed or disagrees with the module's imports/exports
  | "quarantined" // the plugin was quarantined earlier; it is not called any more
  | "invalid-input" // the object could not be transformed (the object's problem, not the plugin's)
  | "closed"; // the handle was closed

export class PluginError extends Error {
  override readonly name = "PluginError";
  readonly code: PluginErrorCode;
  readonly plugin: string;
  /** namespace/name of the object being reflected, when there was one. */
  readonly object?: string;

  constructor(
    code: PluginErrorCode,
    plugin: string,
    message: string,
    options: { object?: string; cause?: unknown } = {},
  ) {
    super(`reflector plugin ${plugin}: ${message}`, { cause: options.cause });
    this.code = code;
    this.plugin = plugin;
    this.object = options.object;
  }

  get quarantines(): boolean {
    return this.code !== "invalid-input" && this.code !== "closed" && this.code !== "quarantined";
  }
}

export function objectKey(
  obj: { metadata?: { namespace?: string; name?: string } } | null | undefined,
): string | undefined {
  if (!obj?.metadata) return undefined;
  const { namespace, name } = obj.metadata;
  return namespace ? `${namespace}/${name}` : name;
}
