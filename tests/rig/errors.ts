/** A rig failure a person can act on: the message says what went wrong and what to do. */
export class RigError extends Error {
  override name = "RigError";
}
