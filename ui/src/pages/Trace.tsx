import { useEffect, useMemo, useRef, useState } from "react";
import { ReactFlow, type Edge, type ReactFlowInstance } from "@xyflow/react";
import { get, usd, type Graph, type GraphNode, type Run, type RunNode } from "../api";
import { Link } from "../router";
import { PipelineNode } from "../editor/PipelineNode";
import { layout, flowEdge, type FlowNode } from "../editor/graph";
import { MediaView, isURL, mediaKindOf } from "../editor/media";
import "../editor/editor.css";

const nodeTypes = { pipeline: PipelineNode };

// elapsed is how long from a to b (or to now while it runs), in words.
export function elapsed(a?: string, b?: string, now?: number): string {
  if (!a) return "–";
  const end = b ? new Date(b).getTime() : now;
  if (end === undefined) return "–";
  const ms = Math.max(0, end - new Date(a).getTime());
  return ms < 10_000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

// useNow ticks while active, so running times count up.
export function useNow(active: boolean): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    const t = window.setInterval(() => setNow(Date.now()), 250);
    return () => window.clearInterval(t);
  }, [active]);
  return now;
}

export function RunStatus({ status }: { status: string }) {
  return <span className={`rstatus rstatus-${status}`}>{status === "fallback" ? "success (fallback served)" : status}</span>;
}

const mediaTypes = new Set(["speech", "music", "video"]);

// fallbackServed says which fallback guardrails served their fallback: the
// run record does not say it, so it is read from the outputs (an output
// carrying the guardrail's exact fallback text, downstream of it).
function fallbackServed(graph: Graph | undefined, run: Run): Set<string> {
  const out = new Set<string>();
  if (!graph || !run.outputs) return out;
  const values = new Set(Object.values(run.outputs));
  for (const n of graph.nodes)
    if (n.type === "guardrail" && n.action === "fallback" && typeof n.fallback === "string" && values.has(n.fallback)) out.add(n.id);
  return out;
}

// Trace shows a run's outcome and its per-node trace. While the run goes
// on, the last node states the status query answered are kept when a poll
// finds none (the query has a one-second deadline), marked as such.
export function Trace({ run, pipelineId, streamed }: { run: Run; pipelineId?: string; streamed?: string }) {
  const running = run.status === "running";
  const now = useNow(running);
  const kept = useRef<{ runId: string; nodes: RunNode[] } | null>(null);
  let nodes = run.nodes ?? [];
  let stale = false;
  if (nodes.length) kept.current = { runId: run.runId, nodes };
  else if (running && kept.current?.runId === run.runId) {
    nodes = kept.current.nodes;
    stale = true;
  }
  const pid = pipelineId ?? run.pipelineId;
  const [graph, setGraph] = useState<Graph | undefined>();
  useEffect(() => {
    if (!pid || !run.version) return;
    let live = true;
    get<{ graph?: Graph }>(`/api/pipelines/${encodeURIComponent(pid)}/versions/${run.version}`).then(
      (v) => live && setGraph(v.graph),
      () => undefined, // the graph view is extra: the trace stands without it
    );
    return () => {
      live = false;
    };
  }, [pid, run.version]);
  const fallbacks = fallbackServed(graph, run);
  const shown = (n: RunNode) => (n.status === "success" && fallbacks.has(n.id) ? "fallback" : n.status);
  const active = nodes.filter((n) => n.status === "running");
  const stage = active.length
    ? active.some((n) => mediaTypes.has(n.type))
      ? `Rendering: ${active
          .filter((n) => mediaTypes.has(n.type))
          .map((n) => `${n.id} (${n.type})`)
          .join(", ")}`
      : `Running: ${active.map((n) => n.id).join(", ")}`
    : running
      ? "Starting"
      : "";
  const nodeCost = nodes.reduce((s, n) => s + (n.costUsd ?? 0), 0);
  const typeOf = (id?: string) => graph?.nodes.find((n) => n.id === id)?.type;
  const sourceOf = (key: string) => graph?.nodes.find((n) => n.type === "output" && n.key === key)?.from;

  return (
    <div className="trace">
      <dl className="facts">
        <dt>Run</dt>
        <dd className="mono">
          <Link to={`/runs/${encodeURIComponent(run.runId)}${pipelineId ? `?pipelineId=${encodeURIComponent(pipelineId)}` : ""}`}>{run.runId}</Link>
        </dd>
        <dt>Status</dt>
        <dd data-testid="run-status">
          <RunStatus status={run.status} />
        </dd>
        <dt>Version</dt>
        <dd>v{run.version}</dd>
        <dt>Duration</dt>
        <dd data-testid="run-elapsed">{run.durationMs !== undefined ? `${run.durationMs} ms` : `${elapsed(run.startedAt, undefined, now)} so far`}</dd>
        {running && (
          <>
            <dt>Stage</dt>
            <dd className="stage" data-testid="run-stage">
              {stage}
            </dd>
          </>
        )}
        {run.usage && (
          <>
            <dt>Tokens</dt>
            <dd>
              {run.usage.prompt} prompt + {run.usage.completion} completion = {run.usage.total}
            </dd>
            <dt>Cost</dt>
            <dd data-testid="run-cost">
              {usd(run.usage.costUsd)} USD
              {nodeCost > 0 && nodes.some((n) => mediaTypes.has(n.type)) ? (
                <span className="muted small"> (media and models: {usd(nodeCost)} USD over the nodes)</span>
              ) : null}
            </dd>
          </>
        )}
        {run.error && (
          <>
            <dt>Error</dt>
            <dd className="error">{run.error}</dd>
          </>
        )}
      </dl>
      {streamed !== undefined && (
        <section aria-labelledby="streamed-h">
          <h3 id="streamed-h">Answer as it streams</h3>
          <pre className="streamed" data-testid="streamed" aria-live="off">
            {streamed}
          </pre>
        </section>
      )}
      {run.outputs && Object.keys(run.outputs).length > 0 && (
        <section aria-labelledby="outputs-h">
          <h3 id="outputs-h">Outputs</h3>
          {Object.entries(run.outputs).map(([k, v]) => {
            const kind = isURL(v) ? mediaKindOf(v, undefined, typeOf(sourceOf(k))) : null;
            return (
              <div key={k} className="output">
                <p className="mono">{k}</p>
                {kind ? (
                  <MediaView url={v} kind={kind} label={`Output ${k}`} testId={`output-${k}`} />
                ) : (
                  <pre data-testid={`output-${k}`}>{v}</pre>
                )}
              </div>
            );
          })}
        </section>
      )}
      {graph && graph.nodes.length > 0 && <RunGraph graph={graph} nodes={nodes} shown={shown} now={now} />}
      {nodes.length > 0 && <NodeTable nodes={nodes} stale={stale} shown={shown} now={now} />}
    </div>
  );
}

// RunGraph is the run's version drawn as in the editor, each node in its
// status's colour, the running ones highlighted.
function RunGraph({ graph, nodes, shown, now }: { graph: Graph; nodes: RunNode[]; shown: (n: RunNode) => string; now: number }) {
  const pos = useMemo(() => layout(graph), [graph]);
  // The whole graph stays in view when the window is resized.
  const rf = useRef<ReactFlowInstance<FlowNode, Edge> | null>(null);
  useEffect(() => {
    const f = () => window.requestAnimationFrame(() => rf.current?.fitView({ maxZoom: 1, padding: 0.1 }));
    window.addEventListener("resize", f);
    return () => window.removeEventListener("resize", f);
  }, []);
  const flowNodes: FlowNode[] = graph.nodes.map((n: GraphNode) => {
    const r = nodes.find((x) => x.id === n.id);
    return {
      id: n.id,
      type: "pipeline",
      position: pos[n.id],
      draggable: false,
      selectable: false,
      focusable: false,
      data: {
        node: n,
        problems: [],
        status: r ? shown(r) : "pending",
        detail: r?.startedAt ? elapsed(r.startedAt, r.finishedAt, now) : undefined,
      },
    };
  });
  const flowEdges: Edge[] = graph.edges.map((e) => ({ ...flowEdge(e.from, e.to), focusable: false, animated: nodes.some((n) => n.id === e.to && n.status === "running") }));
  return (
    <section aria-labelledby="rungraph-h">
      <h3 id="rungraph-h">The run on its graph</h3>
      <div className="run-graph" data-testid="run-graph">
        <ReactFlow
          id="run-graph"
          onInit={(i) => {
            rf.current = i;
          }}
          nodes={flowNodes}
          edges={flowEdges}
          nodeTypes={nodeTypes}
          fitView
          fitViewOptions={{ maxZoom: 1, padding: 0.1 }}
          nodesDraggable={false}
          nodesConnectable={false}
          elementsSelectable={false}
          nodesFocusable={false}
          edgesFocusable={false}
          panOnDrag={false}
          zoomOnScroll={false}
          zoomOnDoubleClick={false}
          preventScrolling={false}
          proOptions={{ hideAttribution: false }}
        />
      </div>
    </section>
  );
}

function NodeTable({ nodes, stale, shown, now }: { nodes: RunNode[]; stale: boolean; shown: (n: RunNode) => string; now: number }) {
  return (
    <table className="nodes">
      <caption>
        Per-node trace
        {stale && <span className="stale small"> (last known states: the live status did not answer this time)</span>}
      </caption>
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
          <tr key={n.id} data-node={n.id} data-status={shown(n)}>
            <td className="mono">{n.id}</td>
            <td>{n.type}</td>
            <td>
              <RunStatus status={shown(n)} />
            </td>
            <td className="num">{n.startedAt ? elapsed(n.startedAt, n.finishedAt, n.status === "running" ? now : undefined) : "–"}</td>
            <td className="num">{n.promptTokens || n.completionTokens ? `${n.promptTokens ?? 0} / ${n.completionTokens ?? 0}` : "–"}</td>
            <td className="num" data-testid={`cost-${n.id}`}>
              {n.costUsd !== undefined ? usd(n.costUsd) : "–"}
            </td>
            <td className="error">{n.error}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
