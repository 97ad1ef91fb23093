// Replaces AssemblyScript's default `env.abort` import so that a failed assertion or an
// out-of-bounds access reaches the host as a readable message before the trap.
@external("liqo:log", "abort")
declare function hostAbort(ptr: usize, len: i32): void;

export function abort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  const text = (message == null ? "abort" : message) + " at " + (fileName == null ? "?" : fileName)
    + ":" + line.toString() + ":" + column.toString();
  const buf = String.UTF8.encode(text);
  hostAbort(changetype<usize>(buf), buf.byteLength);
  unreachable();
}
