// Pays a paid endpoint of a running instance on its Solana network with the
// official @x402/fetch + @x402/svm clients, unmodified, and a key-pair
// signer from @solana/kit.
// usage: node pay-svm.mjs <url> <base58 64-byte secret key> <solana network> <mint> <rpc url> [bearer] [method] [json body]
//
// Only what a caller sets: the Solana JSON-RPC the client reads the mint
// and a recent blockhash from (rpcUrl), and the embedded network's mint in
// the asset allow-list (spendControls.allowedAssets), as a wallet lists any
// non-default asset. The JSON-RPC methods the client called are reported
// (rpcMethods), so the test sees what the network must serve.
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { createKeyPairSignerFromBytes, getBase58Encoder } from "@solana/kit";

const [url, key, network, mint, rpcUrl, bearer, method = "POST", body] = process.argv.slice(2);

const rpcMethods = [];
const plainFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  if (String(input?.url ?? input).startsWith(rpcUrl) && typeof init?.body === "string") {
    for (const req of [JSON.parse(init.body)].flat()) rpcMethods.push(req.method);
  }
  return plainFetch(input, init);
};

const signer = await createKeyPairSignerFromBytes(getBase58Encoder().encode(key));
const client = x402Client.fromConfig({
  schemes: [{ network, client: new ExactSvmScheme(signer, { rpcUrl }) }],
  spendControls: { allowedAssets: [{ network, asset: mint }] },
});
const fetchWithPayment = wrapFetchWithPayment(plainFetch, client);
const headers = bearer ? { Authorization: `Bearer ${bearer}` } : {};
if (body) headers["Content-Type"] = "application/json";
const res = await fetchWithPayment(url, { method, headers, body });
const text = await res.text();
let parsed;
try {
  parsed = JSON.parse(text);
} catch {
  parsed = text;
}
console.log(JSON.stringify({ status: res.status, paymentResponse: res.headers.get("PAYMENT-RESPONSE"), body: parsed, rpcMethods }));
