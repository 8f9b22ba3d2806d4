import { usd, type Run, type RunNode } from "../api";
import { Link } from "../router";
import { Status } from "../ui";

const ms = (a?: string, b?: string) => (a && b ? `${Math.max(0, new Date(b).getTime() - new Date(a).getTime())} ms` : "–");

// Trace shows a run's outcome and its per-node trace.
export function Trace({ run, pipelineId }: { run: Run; pipelineId?: string }) {
  return (
    <div className="trace">
      <dl className="facts">
        <dt>Run</dt>
        <dd className="mono">
          <Link to={`/runs/${encodeURIComponent(run.runId)}${pipelineId ? `?pipelineId=${encodeURIComponent(pipelineId)}` : ""}`}>{run.runId}</Link>
        </dd>
        <dt>Status</dt>
        <dd data-testid="run-status">
          <Status status={run.status} />
        </dd>
        <dt>Version</dt>
        <dd>v{run.version}</dd>
        <dt>Duration</dt>
        <dd>{run.durationMs !== undefined ? `${run.durationMs} ms` : "running…"}</dd>
        {run.usage && (
          <>
            <dt>Tokens</dt>
            <dd>
              {run.usage.prompt} prompt + {run.usage.completion} completion = {run.usage.total}
            </dd>
            <dt>Cost</dt>
            <dd data-testid="run-cost">{usd(run.usage.costUsd)} USD</dd>
          </>
        )}
        {run.error && (
          <>
            <dt>Error</dt>
            <dd className="error">{run.error}</dd>
          </>
        )}
      </dl>
      {run.outputs && Object.keys(run.outputs).length > 0 && (
        <section aria-labelledby="outputs-h">
          <h3 id="outputs-h">Outputs</h3>
          {Object.entries(run.outputs).map(([k, v]) => (
            <div key={k} className="output">
              <p className="mono">{k}</p>
              <pre data-testid={`output-${k}`}>{v}</pre>
            </div>
          ))}
        </section>
      )}
      {run.nodes && run.nodes.length > 0 && <NodeTable nodes={run.nodes} />}
    </div>
  );
}

function NodeTable({ nodes }: { nodes: RunNode[] }) {
  return (
    <table className="nodes">
      <caption>Per-node trace</caption>
      <thead>
        <tr>
          <th scope="col">Node</th>
          <th scope="col">Type</th>
          <th scope="col">Status</th>
          <th scope="col" className="num">
            Time
          </th>
          <th scope="col" className="num">
            Tokens (prompt / completion)
          </th>
          <th scope="col" className="num">
            Cost (USD)
          </th>
          <th scope="col">Error</th>
        </tr>
      </thead>
      <tbody>
        {nodes.map((n) => (
          <tr key={n.id} data-node={n.id}>
            <td className="mono">{n.id}</td>
            <td>{n.type}</td>
            <td>
              <Status status={n.status} />
            </td>
            <td className="num">{ms(n.startedAt, n.finishedAt)}</td>
            <td className="num">{n.promptTokens || n.completionTokens ? `${n.promptTokens ?? 0} / ${n.completionTokens ?? 0}` : "–"}</td>
            <td className="num">{n.costUsd !== undefined ? usd(n.costUsd) : "–"}</td>
            <td className="error">{n.error}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
