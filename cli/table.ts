/** Rows in columns, each as wide as its widest cell plus three spaces (kubectl's look). */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]! + 3))
        .join("")
        .trimEnd(),
    )
    .join("\n");
}
