// Connects the official TypeScript MCP SDK client, unmodified, to a running
// conduit tool server knowing nothing but its URL, with the SDK's own OAuth
// support and the SDK's own example provider (InMemoryOAuthClientProvider,
// which makes no `state`) and the example's client metadata. The SDK meets
// the 401, discovers the authorization server, registers itself and sends
// the human to the authorization URL; this script prints that URL and reads
// back where the human's browser was sent (the Go test,
// frontend/mcp_interop_oauth_test.go, plays the human on the consent page).
// Then it finishes the authorization, reconnects, lists the tools, calls two,
// and prints what it got and the tokens it holds.
//
//   node oauth.mjs <mcp url>
//   stdout: {"authorize": "<url>"}   stdin: <the redirect URL>   stdout: {…result}
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { InMemoryOAuthClientProvider } from "@modelcontextprotocol/sdk/examples/client/simpleOAuthClientProvider.js";

const [url] = process.argv.slice(2);
const CALLBACK_URL = "http://127.0.0.1:9/callback";
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

const provider = new InMemoryOAuthClientProvider(
  CALLBACK_URL,
  {
    client_name: "Simple OAuth MCP Client",
    redirect_uris: [CALLBACK_URL],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_post",
  },
  (authorizationUrl) => console.log(JSON.stringify({ authorize: authorizationUrl.toString() })),
);

const client = new Client({ name: "conduit-oauth-interop", version: "1.0.0" });
let transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
let unauthorized = false;
try {
  await client.connect(transport);
} catch (error) {
  if (!(error instanceof UnauthorizedError)) throw error;
  unauthorized = true;
}
if (!unauthorized) throw new Error("connected without authorizing");

const { value: redirect } = await lines.next();
const back = new URL(redirect);
const code = back.searchParams.get("code");
if (!code) throw new Error(`no code in the answer: ${redirect}`);
await transport.finishAuth(code);

transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
await client.connect(transport);
const { tools } = await client.listTools();
const balance = await client.callTool({ name: "get_credit_balance", arguments: {} });
const pipelines = await client.callTool({ name: "list_pipelines", arguments: {} });
const keys = await client.callTool({ name: "create_api_key", arguments: { name: "from TypeScript" } });

console.log(JSON.stringify({
  tools: tools.length,
  balance: balance.structuredContent,
  pipelines: pipelines.structuredContent,
  createKey: { isError: keys.isError, text: keys.content?.[0]?.text },
  client: { id: provider.clientInformation()?.client_id, scope: provider.clientInformation()?.scope },
  tokens: provider.tokens(),
}));
await client.close();
process.exit(0);
