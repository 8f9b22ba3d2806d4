import { Handle, Position, type NodeProps } from "@xyflow/react";
import type { FlowNode } from "./graph";
import { kindOf, summary } from "./graph";

// PipelineNode draws one node: its kind, id, a summary of its settings and
// the API's validation problems for it; on a run's graph, its status.
export function PipelineNode({ data, selected }: NodeProps<FlowNode>) {
  const n = data.node;
  const k = kindOf(n.type);
  const bad = data.problems.length > 0;
  const run = data.status ? ` run-${data.status}` : "";
  return (
    <div className={`pnode pnode-${n.type}${selected ? " selected" : ""}${bad ? " invalid" : ""}${run}`} data-node-id={n.id} data-status={data.status}>
      {n.type !== "input" && <Handle type="target" position={Position.Left} />}
      <div className="pnode-kind">{k?.label ?? n.type}</div>
      <div className="pnode-id">{n.id}</div>
      <div className="pnode-summary">{summary(n)}</div>
      {data.status && (
        <div className="pnode-run">
          <span className={`rstatus rstatus-${data.status}`}>{data.status === "fallback" ? "fallback served" : data.status}</span>
          {data.detail ? <span className="muted"> {data.detail}</span> : null}
        </div>
      )}
      {bad && (
        <ul className="pnode-problems" aria-label={`${data.problems.length} problem(s) in ${n.id}`}>
          {data.problems.map((p, i) => (
            <li key={i}>
              {p.field ? <strong>{p.field}: </strong> : null}
              {p.message}
            </li>
          ))}
        </ul>
      )}
      {n.type !== "output" && <Handle type="source" position={Position.Right} />}
    </div>
  );
}
