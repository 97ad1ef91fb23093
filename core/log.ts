// Structured logging: one JSON object per line on stderr, with the object's key when there is one.
export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

const order: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  write?: (line: string) => void;
  now?: () => Date;
}

export function createLogger(base: LogFields = {}, options: LoggerOptions = {}): Logger {
  const min = order[options.level ?? "info"];
  const write = options.write ?? ((line: string) => process.stderr.write(line + "\n"));
  const now = options.now ?? (() => new Date());
  const emit = (level: LogLevel, msg: string, fields?: LogFields) => {
    if (order[level] < min) return;
    // ts, level and msg are the record's own: a field of the same name cannot hide them (it is kept as field.<name>).
    const record: LogFields = { ts: now().toISOString(), level, msg };
    for (const [k, v] of Object.entries({ ...base, ...fields })) record[k in record ? `field.${k}` : k] = v;
    if (record.err instanceof Error) record.err = describeError(record.err);
    write(JSON.stringify(record));
  };
  return {
    debug: (m, f) => emit("debug", m, f),
    info: (m, f) => emit("info", m, f),
    warn: (m, f) => emit("warn", m, f),
    error: (m, f) => emit("error", m, f),
    child: (fields) => createLogger({ ...base, ...fields }, options),
  };
}

function describeError(err: Error): LogFields {
  const out: LogFields = { name: err.name, message: err.message };
  if (err.cause instanceof Error) out.cause = describeError(err.cause);
  return out;
}

/** A logger that drops everything: for tests and benchmarks that measure, not read. */
export const silentLogger: Logger = createLogger({}, { write: () => {} });
