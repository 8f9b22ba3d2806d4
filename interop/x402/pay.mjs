// Pays the credit top-up of a running instance with the official
// @x402/fetch + @x402/evm clients and a viem private-key account.
// usage: node pay.mjs <url> <0x private key> <eip155 network> <token address> [bearer]
//
// The network is the one the instance offers: the spec's default
// (eip155:8453) or the dev command's play chain (eip155:31337); the clients
// sign for any eip155 chain id. They refuse tokens they do not know unless
// the caller opts in (spendControls.allowedAssets): the embedded network's
// token is listed here, as a wallet would list any non-default asset.
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";

const [url, key, network, token, bearer] = process.argv.slice(2);
const account = privateKeyToAccount(key);
const client = x402Client.fromConfig({
  schemes: [{ network, client: new ExactEvmScheme(account) }],
  spendControls: { allowedAssets: [{ network, asset: token }] },
});
const fetchWithPayment = wrapFetchWithPayment(fetch, client);
const headers = bearer ? { Authorization: `Bearer ${bearer}` } : {};
const res = await fetchWithPayment(url, { method: "POST", headers });
const body = await res.text();
console.log(JSON.stringify({ status: res.status, paymentResponse: res.headers.get("PAYMENT-RESPONSE"), body: JSON.parse(body) }));
