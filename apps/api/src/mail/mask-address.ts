/** An address as the admin view and the logs' routine lines show it: its first character and its domain (`j***@example.com`). */
export function maskAddress(address: string): string {
  const at = address.lastIndexOf('@');
  if (at < 1) return '***';
  return `${address[0]}***${address.slice(at)}`;
}

/** Every address inside a piece of text masked (a server's refusal often quotes the recipient). */
export function maskAddressesIn(text: string): string {
  return text.replace(/[^\s<>"'(),;:]+@[^\s<>"'(),;:]+/g, maskAddress);
}
