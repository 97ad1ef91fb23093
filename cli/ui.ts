// Terminal output like kubectl's: INFO lines, a spinner on long waits when stderr is a terminal
// (a line per state change otherwise, so CI logs stay readable).
const tty = process.stderr.isTTY;

export function info(message: string) {
  process.stderr.write(` INFO  ${message}\n`);
}

/** A line of its own, also while a spinner turns (it redraws on the next line). */
export function warn(message: string) {
  process.stderr.write(`${tty ? "\r\x1b[K" : ""} WARN  ${message}\n`);
}

export interface Spinner {
  update(text: string): void;
  succeed(text: string): void;
  fail(text: string): void;
}

export function spinner(text: string): Spinner {
  const frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
  let current = text;
  let i = 0;
  let timer: ReturnType<typeof setInterval> | undefined;
  if (tty) {
    timer = setInterval(() => process.stderr.write(`\r ${frames[i++ % frames.length]}     ${current}\x1b[K`), 80);
  } else {
    process.stderr.write(` ...   ${current}\n`);
  }
  const end = (mark: string, final: string) => {
    if (timer) clearInterval(timer);
    process.stderr.write(`${tty ? "\r" : ""} ${mark}     ${final}${tty ? "\x1b[K" : ""}\n`);
  };
  return {
    update(next) {
      if (next === current) return;
      current = next;
      if (!tty) process.stderr.write(` ...   ${current}\n`);
    },
    succeed: (final) => end("✔", final),
    fail: (final) => end("✖", final),
  };
}

/** Values of a flag that may be repeated (citty keeps only the last one). */
export function repeatedFlag(rawArgs: string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const a = rawArgs[i]!;
    if (a === `--${name}` && i + 1 < rawArgs.length) out.push(rawArgs[++i]!);
    else if (a.startsWith(`--${name}=`)) out.push(a.slice(name.length + 3));
  }
  return out;
}

export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new Error(`--${flag} ${text}: use a duration such as 90s, 2m or 1h`);
  const n = Number(m[1]);
  return n * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? "s"] as number);
}
