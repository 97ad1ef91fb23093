// Replaces AssemblyScript's default `env.abort` import so that a failed assertion or an
// out-of-bounds access reaches the host as a readable message before the trap. @global gives it
// one name however the compiler reached the SDK (a package, a relative path), so the SDK's
// asconfig.json can say `--use abort=liqoSdkAbort` for every project.
@external("liqo:log", "abort")
declare function hostAbort(ptr: usize, len: i32): void;

// @ts-ignore: decorator
@global
export function liqoSdkAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  const text = (message == null ? "abort" : message) + " at " + (fileName == null ? "?" : fileName)
    + ":" + line.toString() + ":" + column.toString();
  const buf = String.UTF8.encode(text);
  hostAbort(changetype<usize>(buf), buf.byteLength);
  unreachable();
}
