// Drives a running conduit tool server with the official TypeScript MCP
// SDK client, unmodified: connect over streamable HTTP with a bearer API
// key, list the tools, author, publish and run a pipeline (waiting, with
// progress), read the run back, and make one bad call. Prints one JSON
// object for the Go test (frontend/interop_mcp_test.go) to check.
//
//   node drive.mjs <mcp url> <api key> <draft graph JSON>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key, draftJSON] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: "conduit-interop", version: "1.0.0" });
await client.connect(transport);

// The SDK checks every structured result against the tool's output
// schema, so a schema it cannot read or an answer that breaks it fails here.
const call = (name, args, options) => client.callTool({ name, arguments: args }, undefined, options);

const { tools } = await client.listTools();
const created = await call("create_pipeline", { name: "interop", draft: JSON.parse(draftJSON) });
const pipelineId = created.structuredContent.id;
const published = await call("publish_pipeline", { pipelineId });
const progress = [];
const run = await call(
  "run_pipeline",
  { pipelineId, inputs: { question: "hello from TypeScript, echoed back slowly one token at a time" }, waitSeconds: 60 },
  { onprogress: (p) => progress.push(p), timeout: 90_000 },
);
const got = await call("get_run", { runId: run.structuredContent.runId });
const bad = await call("run_pipeline", { pipelineId, inputs: {} });

console.log(JSON.stringify({
  protocolVersion: transport.protocolVersion,
  sessionId: transport.sessionId,
  tools: tools.map((t) => ({ name: t.name, hasInput: !!t.inputSchema, hasOutput: !!t.outputSchema, readOnly: t.annotations?.readOnlyHint })),
  created: created.structuredContent,
  published: published.structuredContent,
  run: run.structuredContent,
  progress,
  got: got.structuredContent,
  bad: { isError: bad.isError, text: bad.content?.[0]?.text },
}));
await client.close();
