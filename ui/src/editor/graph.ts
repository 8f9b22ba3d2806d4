// The pipeline graph (docs/pipelines.md) and its React Flow view.
import { MarkerType, type Edge, type Node } from "@xyflow/react";
import type { Graph, GraphNode, Problem } from "../api";

export type FieldSpec = {
  name: string;
  label: string;
  kind: "text" | "textarea" | "number" | "checkbox" | "select" | "json";
  options?: string[];
  help?: string;
};

// The five node kinds the palette adds, with the fields the API knows
// (internal/pipeline/graph.go).
export const kinds: { type: string; label: string; help: string; fields: FieldSpec[] }[] = [
  {
    type: "input",
    label: "Input",
    help: "a value the caller sends",
    fields: [
      { name: "key", label: "Input key", kind: "text", help: "the key of inputs a caller sends" },
      { name: "required", label: "Required", kind: "checkbox" },
      { name: "description", label: "Description", kind: "text" },
    ],
  },
  {
    type: "prompt",
    label: "Prompt / transform",
    help: "a template, or a transform of one value",
    fields: [
      { name: "template", label: "Template", kind: "textarea", help: "{{nodeId}} inserts an upstream node's value" },
      { name: "transform", label: "Transform (instead of a template)", kind: "select", options: ["", "json", "upper", "lower", "trim"] },
      { name: "source", label: "Transform source node", kind: "text" },
      { name: "path", label: "JSON path (json transform)", kind: "text" },
    ],
  },
  {
    type: "model",
    label: "Model",
    help: "a text model call",
    fields: [
      { name: "model", label: "Model", kind: "text", help: "a catalog id, e.g. local-echo" },
      { name: "system", label: "System prompt", kind: "textarea" },
      { name: "prompt", label: "Prompt", kind: "textarea", help: "{{nodeId}} inserts an upstream node's value" },
      { name: "maxTokens", label: "Max tokens", kind: "number" },
      { name: "temperature", label: "Temperature (0–2)", kind: "number" },
    ],
  },
  {
    type: "guardrail",
    label: "Guardrail",
    help: "checks a value against rules",
    fields: [
      { name: "input", label: "Checked node", kind: "text" },
      { name: "rules", label: "Rules (JSON)", kind: "json", help: 'e.g. [{"kind":"maxLength","value":2000},{"kind":"pii"}]' },
      { name: "action", label: "On failure", kind: "select", options: ["block", "fallback"] },
      { name: "fallback", label: "Fallback text", kind: "text" },
    ],
  },
  {
    type: "output",
    label: "Output",
    help: "a value the caller gets back",
    fields: [
      { name: "key", label: "Output key", kind: "text", help: "the key in the run's outputs" },
      { name: "from", label: "From node", kind: "text" },
    ],
  },
];

export const kindOf = (type: string) => kinds.find((k) => k.type === type);


export type NodeData = { node: GraphNode; problems: Problem[] };
export type FlowNode = Node<NodeData, "pipeline">;

// newNode makes a node of a kind with an unused id and sensible defaults.
export function newNode(type: string, existing: GraphNode[]): GraphNode {
  let n = 1;
  const ids = new Set(existing.map((x) => x.id));
  while (ids.has(`${type}${n}`)) n++;
  const id = `${type}${n}`;
  const same = existing.filter((x) => x.type === type).length;
  switch (type) {
    case "input":
      return { id, type, key: same === 0 ? "question" : `question${same + 1}` };
    case "output":
      return { id, type, key: same === 0 ? "answer" : `answer${same + 1}` };
    case "model":
      return { id, type, model: "local-echo", maxTokens: 256 };
    case "guardrail":
      return { id, type, rules: [{ kind: "maxLength", value: 2000 }], action: "block" };
    default:
      return { id, type, template: "" };
  }
}

// placeNew puts an input below the other inputs at the left, and any other
// node to the right of the rightmost one, so a chain grows left to right.
export function placeNew(type: string, nodes: FlowNode[]): { x: number; y: number } {
  if (type === "input") {
    const ys = nodes.filter((n) => n.data.node.type === "input").map((n) => n.position.y);
    return { x: 0, y: ys.length ? Math.max(...ys) + 120 : 40 };
  }
  const xs = nodes.map((n) => n.position.x);
  return { x: xs.length ? Math.max(...xs) + 240 : 240, y: 40 };
}

// layout places nodes by their depth in the graph (longest path from a
// source), in graph order within a layer.
export function layout(g: Graph): Record<string, { x: number; y: number }> {
  const depth: Record<string, number> = {};
  const incoming: Record<string, string[]> = {};
  for (const e of g.edges) (incoming[e.to] ||= []).push(e.from);
  const visit = (id: string, seen: Set<string>): number => {
    if (depth[id] !== undefined) return depth[id];
    if (seen.has(id)) return 0;
    seen.add(id);
    const d = Math.max(-1, ...(incoming[id] || []).map((p) => visit(p, seen))) + 1;
    depth[id] = d;
    return d;
  };
  const rows: Record<number, number> = {};
  const out: Record<string, { x: number; y: number }> = {};
  for (const n of g.nodes) {
    const d = visit(n.id, new Set());
    const r = rows[d] ?? 0;
    rows[d] = r + 1;
    out[n.id] = { x: d * 240, y: 40 + r * 140 };
  }
  return out;
}

export function toFlow(g: Graph, saved: Record<string, { x: number; y: number }>): { nodes: FlowNode[]; edges: Edge[] } {
  const auto = layout(g);
  return {
    nodes: g.nodes.map((n) => ({ id: n.id, type: "pipeline", position: saved[n.id] ?? auto[n.id], data: { node: n, problems: [] } })),
    edges: g.edges.map((e) => flowEdge(e.from, e.to)),
  };
}

export function flowEdge(from: string, to: string): Edge {
  return {
    id: `${from}->${to}`,
    source: from,
    target: to,
    ariaLabel: `Edge from ${from} to ${to}`,
    markerEnd: { type: MarkerType.ArrowClosed, color: "#3d4656" },
    style: { stroke: "#3d4656", strokeWidth: 2 },
  };
}

// clean drops the fields a node leaves empty, so the graph reads as one
// written by hand.
export function clean(n: GraphNode): GraphNode {
  const out: GraphNode = { id: n.id, type: n.type };
  for (const [k, v] of Object.entries(n)) {
    if (k === "id" || k === "type") continue;
    if (v === "" || v === undefined || v === null) continue;
    if (k === "required" && v === true) continue;
    out[k] = v;
  }
  return out;
}

export function fromFlow(nodes: FlowNode[], edges: Edge[]): Graph {
  return {
    nodes: nodes.map((n) => clean(n.data.node)),
    edges: edges.map((e) => ({ from: e.source, to: e.target })),
  };
}

// onConnect fills the field a new edge obviously feeds when it is empty:
// an output's from, a guardrail's input, a model's prompt, a template.
export function fillOnConnect(target: GraphNode, source: string): GraphNode {
  const t = { ...target };
  switch (t.type) {
    case "output":
      if (!t.from) t.from = source;
      break;
    case "guardrail":
      if (!t.input) t.input = source;
      break;
    case "model":
      if (!t.prompt) t.prompt = `{{${source}}}`;
      break;
    case "prompt":
      if (!t.template && !t.transform) t.template = `{{${source}}}`;
      break;
  }
  return t;
}

export type FieldChange = { field: string; before: unknown; after: unknown };
export type Diff = {
  nodesAdded: GraphNode[];
  nodesRemoved: GraphNode[];
  nodesChanged: { id: string; type: string; changes: FieldChange[] }[];
  edgesAdded: string[];
  edgesRemoved: string[];
};

// diff says what changed from graph a to graph b.
export function diff(a: Graph, b: Graph): Diff {
  const am = new Map(a.nodes.map((n) => [n.id, n]));
  const bm = new Map(b.nodes.map((n) => [n.id, n]));
  const d: Diff = { nodesAdded: [], nodesRemoved: [], nodesChanged: [], edgesAdded: [], edgesRemoved: [] };
  for (const n of b.nodes) if (!am.has(n.id)) d.nodesAdded.push(n);
  for (const n of a.nodes) if (!bm.has(n.id)) d.nodesRemoved.push(n);
  for (const n of b.nodes) {
    const o = am.get(n.id);
    if (!o) continue;
    const fields = [...new Set([...Object.keys(o), ...Object.keys(n)])].filter((f) => f !== "id").sort();
    const changes = fields
      .filter((f) => JSON.stringify(o[f]) !== JSON.stringify(n[f]))
      .map((f) => ({ field: f, before: o[f], after: n[f] }));
    if (changes.length) d.nodesChanged.push({ id: n.id, type: n.type, changes });
  }
  const key = (e: { from: string; to: string }) => `${e.from} → ${e.to}`;
  const ae = new Set(a.edges.map(key));
  const be = new Set(b.edges.map(key));
  d.edgesAdded = [...be].filter((e) => !ae.has(e));
  d.edgesRemoved = [...ae].filter((e) => !be.has(e));
  return d;
}

export function summary(n: GraphNode): string {
  switch (n.type) {
    case "input":
    case "output":
      return n.key ? `key: ${n.key}` : "";
    case "model":
      return n.model || "";
    case "prompt":
      return n.transform ? `${n.transform}(${n.source || "?"})` : (n.template || "").slice(0, 40);
    case "guardrail":
      return `${Array.isArray(n.rules) ? n.rules.length : 0} rule(s), ${n.action || "block"}`;
  }
  return "";
}
