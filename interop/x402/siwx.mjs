// Signs in to the purchases listing of a running instance with the
// official Sign-In-With-X client (@x402/extensions, unmodified) and a viem
// private-key account, and prints the answer as JSON.
// usage: node siwx.mjs <purchases url> <0x private key> [extension|wrap]
//
// Two official ways to sign in: "extension" (default), an x402Client with
// the SIWX client extension through @x402/fetch's wrapper, which takes
// the first offered chain of its signer's type; and "wrap",
// wrapFetchWithSIWx, which takes the chain of accepts[0].network. Both
// check that the challenge is bound to the origin they fetched (domain =
// that URL's host, port included; uri on that origin), sign the EIP-4361
// message and retry with the SIGN-IN-WITH-X header.
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { createSIWxClientExtension, wrapFetchWithSIWx } from "@x402/extensions/sign-in-with-x";
import { privateKeyToAccount } from "viem/accounts";

const [url, key, mode = "extension"] = process.argv.slice(2);
const account = privateKeyToAccount(key);
const fetchWithSignIn = mode === "wrap"
  ? wrapFetchWithSIWx(fetch, account)
  : wrapFetchWithPayment(fetch, new x402Client().registerExtension(createSIWxClientExtension({ signers: [account] })));
let res;
try {
  res = await fetchWithSignIn(url);
} catch (e) {
  // The extension did not sign (e.g. a challenge not bound to the fetched
  // origin), so the wrapper fell back to paying, which a free route cannot
  // be.
  console.log(JSON.stringify({ error: `not signed in: ${e.message}`, address: account.address }));
  process.exit(1);
}
const text = await res.text();
let body;
try {
  body = JSON.parse(text);
} catch {
  body = text;
}
console.log(JSON.stringify({ status: res.status, address: account.address, body }));
