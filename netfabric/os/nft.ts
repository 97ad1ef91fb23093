// nftables adapter: a whole table is replaced in one `nft -f -` transaction, so the data plane
// never sees a half-written NAT table; reads use the JSON schema.
import { CommandError } from "./errors.ts";
import type { CommandRunner } from "./run.ts";

export interface NftRule {
  chain: string;
  handle: number;
  comment?: string;
  expr: unknown[];
}

export interface NftTable {
  family: string;
  name: string;
  chains: string[];
  rules: NftRule[];
  /** Named sets and their elements as nft prints them (plain addresses as strings). */
  sets: Record<string, unknown[]>;
}

export interface NftAdapter {
  /** Runs a ruleset script atomically (all or nothing). */
  apply(script: string): Promise<void>;
  /** The table's chains and rules, or undefined when it does not exist. */
  listTable(family: string, name: string): Promise<NftTable | undefined>;
  deleteRule(family: string, table: string, chain: string, handle: number): Promise<void>;
}

export function createNft(runner: CommandRunner, netns?: string): NftAdapter {
  return {
    async apply(script) {
      await runner.run(["nft", "-f", "-"], { stdin: script, netns });
    },
    async listTable(family, name) {
      let text: string;
      try {
        text = await runner.run(["nft", "-j", "list", "table", family, name], { netns });
      } catch (err) {
        if (err instanceof CommandError && /No such file or directory/.test(err.stderr)) return undefined;
        throw err;
      }
      return parseTable(family, name, text);
    },
    async deleteRule(family, table, chain, handle) {
      await runner.run(["nft", "delete", "rule", family, table, chain, "handle", String(handle)], { netns });
    },
  };
}

export function parseTable(family: string, name: string, text: string): NftTable {
  // biome-ignore lint/suspicious/noExplicitAny: nft --json output, whose items hold one of many object kinds; only chain, set and rule are read, each field as found
  const items = (JSON.parse(text) as { nftables: Record<string, any>[] }).nftables;
  const table: NftTable = { family, name, chains: [], rules: [], sets: {} };
  for (const item of items) {
    if (item.chain) table.chains.push(item.chain.name);
    // An empty set has no elem; one with elements lists them (an array, also for one element).
    if (item.set) table.sets[item.set.name] = item.set.elem === undefined ? [] : [item.set.elem].flat();
    if (item.rule)
      table.rules.push({
        chain: item.rule.chain,
        handle: item.rule.handle,
        comment: item.rule.comment,
        expr: item.rule.expr,
      });
  }
  return table;
}
