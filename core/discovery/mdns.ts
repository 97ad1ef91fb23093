// One mDNS socket (RFC 6762) on node:dgram: bound to 5353 with address reuse, joined to
// 224.0.0.251 on one interface (the node's address when run with hostNetwork), sending there
// with TTL 255. Packets from anywhere else than the multicast group's link are never sent.
import dgram from "node:dgram";

export const MDNS_GROUP = "224.0.0.251";
export const MDNS_PORT = 5353;

export interface MdnsSocketOptions {
  /** The IPv4 address of the interface to join and send on (default: the kernel's choice). */
  interfaceAddress?: string;
  port?: number;
  group?: string;
}

export interface MdnsSocket {
  send(bytes: Uint8Array): Promise<void>;
  close(): Promise<void>;
}

export async function openMdnsSocket(
  o: MdnsSocketOptions,
  onMessage: (bytes: Uint8Array, from: string) => void,
  onError: (err: Error) => void,
): Promise<MdnsSocket> {
  const group = o.group ?? MDNS_GROUP;
  const port = o.port ?? MDNS_PORT;
  const socket = dgram.createSocket({ type: "udp4", reuseAddr: true });
  socket.on("message", (msg, rinfo) =>
    onMessage(new Uint8Array(msg.buffer, msg.byteOffset, msg.byteLength), rinfo.address),
  );
  socket.on("error", onError);
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(port, () => {
      socket.off("error", reject);
      resolve();
    });
  });
  socket.addMembership(group, o.interfaceAddress);
  if (o.interfaceAddress) socket.setMulticastInterface(o.interfaceAddress);
  socket.setMulticastTTL(255);
  // Our own packets come back; answers carrying our cluster ID are ignored by the reader.
  socket.setMulticastLoopback(true);
  return {
    send: (bytes) =>
      new Promise((resolve, reject) => socket.send(bytes, port, group, (err) => (err ? reject(err) : resolve()))),
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}
