import type { Pipeline } from "../api";
import { CopyButton } from "../ui";

function Snippet({ title, code }: { title: string; code: string }) {
  return (
    <section className="snippet" aria-label={title}>
      <div className="row">
        <h3>{title}</h3>
        <CopyButton text={code} label={`Copy ${title}`} />
      </div>
      <pre tabIndex={0}>
        <code>{code}</code>
      </pre>
    </section>
  );
}

export function Snippets({ pipeline }: { pipeline: Pipeline }) {
  const base = location.origin;
  const c = pipeline.contract;
  const inputs = Object.fromEntries((c?.inputs ?? []).map((i) => [i.key, `your ${i.key}`]));
  const path = `/api/pipelines/${pipeline.id}`;
  const curl = `export CONDUIT_API_KEY=cnd_…   # a key with pipelines:run (API keys page)

# Start a run (202 with runId and statusUrl)
curl -sS -X POST ${base}${path}/invoke \\
  -H "Authorization: Bearer $CONDUIT_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '${JSON.stringify({ inputs })}'

# Poll it (the statusUrl; '#' in the run id is sent as %23)
curl -sS "${base}${path}/invoke?runId=<runId>" \\
  -H "Authorization: Bearer $CONDUIT_API_KEY"`;
  const first = c?.inputs[0]?.key ?? "input";
  const py = `from openai import OpenAI

client = OpenAI(base_url="${base}${path}/", api_key="cnd_…")
answer = client.chat.completions.create(
    model="${pipeline.id}",
    # the latest user message becomes the input "${first}"
    messages=[{"role": "user", "content": "Hello"}],
)
print(answer.choices[0].message.content)`;
  const js = `import OpenAI from "openai";

const client = new OpenAI({ baseURL: "${base}${path}/", apiKey: process.env.CONDUIT_API_KEY });
const answer = await client.chat.completions.create({
  model: "${pipeline.id}",
  messages: [{ role: "user", content: "Hello" }],
});
console.log(answer.choices[0].message.content);`;
  return (
    <div>
      <section aria-labelledby="contract-h">
        <h2 id="contract-h">Contract (serving version)</h2>
        {c ? (
          <table>
            <thead>
              <tr>
                <th scope="col">Direction</th>
                <th scope="col">Key</th>
                <th scope="col">Required</th>
                <th scope="col">Description</th>
              </tr>
            </thead>
            <tbody>
              {c.inputs.map((i) => (
                <tr key={"i" + i.key}>
                  <td>input</td>
                  <td className="mono">{i.key}</td>
                  <td>{i.required ? "yes" : "no"}</td>
                  <td>{i.description}</td>
                </tr>
              ))}
              {c.outputs.map((o) => (
                <tr key={"o" + o}>
                  <td>output</td>
                  <td className="mono">{o}</td>
                  <td></td>
                  <td></td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : (
          <p>Not published yet: the contract is the serving version's.</p>
        )}
      </section>
      <Snippet title="curl" code={curl} />
      <Snippet title="OpenAI Python client" code={py} />
      <Snippet title="OpenAI JavaScript client" code={js} />
    </div>
  );
}
