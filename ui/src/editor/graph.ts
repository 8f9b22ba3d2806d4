// The pipeline graph (docs/pipelines.md) and its React Flow view.
import { MarkerType, type Edge, type Node } from "@xyflow/react";
import dagre from "@dagrejs/dagre";
import type { Graph, GraphNode, Problem } from "../api";

export type FieldSpec = {
  name: string;
  label: string;
  // template: text with {{variable}} autocomplete; node: another node's id;
  // rules: the guardrail rules form; the pickers read the catalog.
  kind:
    | "text"
    | "textarea"
    | "template"
    | "number"
    | "checkbox"
    | "select"
    | "json"
    | "node"
    | "rules"
    | "textModel"
    | "mediaModel"
    | "voice"
    | "seconds"
    | "aspectRatio";
  options?: string[];
  help?: string;
  // showIf hides a field that does not apply to the node's other settings.
  showIf?: (n: GraphNode) => boolean;
};

// The node kinds the palette adds, with the fields the API knows
// (internal/graph, docs/pipelines.md).
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
      { name: "template", label: "Template", kind: "template", help: "{{nodeId}} inserts an upstream node's value", showIf: (n) => !n.transform },
      { name: "transform", label: "Transform (instead of a template)", kind: "select", options: ["", "json", "upper", "lower", "trim"] },
      { name: "source", label: "Transform source node", kind: "node", showIf: (n) => !!n.transform },
      { name: "path", label: "JSON path (json transform)", kind: "text", showIf: (n) => n.transform === "json" },
    ],
  },
  {
    type: "model",
    label: "Model",
    help: "a text model call",
    fields: [
      { name: "model", label: "Model", kind: "textModel", help: "from the model catalog, with its price per 1,000 tokens" },
      { name: "system", label: "System prompt", kind: "template" },
      { name: "prompt", label: "Prompt", kind: "template", help: "{{nodeId}} inserts an upstream node's value" },
      { name: "maxTokens", label: "Max tokens", kind: "number" },
      { name: "temperature", label: "Temperature (0–2)", kind: "number" },
    ],
  },
  {
    type: "guardrail",
    label: "Guardrail",
    help: "checks a value against rules",
    fields: [
      { name: "input", label: "Checked node", kind: "node" },
      { name: "rules", label: "Rules", kind: "rules" },
      { name: "action", label: "On failure", kind: "select", options: ["block", "fallback"] },
      { name: "fallback", label: "Fallback text", kind: "text", help: "served instead of the value when a rule fails", showIf: (n) => n.action === "fallback" },
    ],
  },
  {
    type: "speech",
    label: "Speech",
    help: "reads a text aloud (MP3)",
    fields: [
      { name: "text", label: "Text to say", kind: "template", help: "{{nodeId}} inserts an upstream node's value" },
      { name: "model", label: "Speech model", kind: "mediaModel" },
      { name: "voice", label: "Voice", kind: "voice" },
    ],
  },
  {
    type: "music",
    label: "Music",
    help: "composes a track (MP3)",
    fields: [
      { name: "prompt", label: "Description", kind: "template", help: "genre, mood, instruments, tempo" },
      { name: "model", label: "Music model", kind: "mediaModel" },
      { name: "seconds", label: "Length", kind: "seconds" },
    ],
  },
  {
    type: "video",
    label: "Video",
    help: "renders a clip (MP4)",
    fields: [
      { name: "prompt", label: "What the clip shows", kind: "template", help: "{{nodeId}} inserts an upstream node's value" },
      { name: "model", label: "Video model", kind: "mediaModel" },
      { name: "seconds", label: "Length", kind: "seconds" },
      { name: "aspectRatio", label: "Aspect ratio", kind: "aspectRatio" },
    ],
  },
  {
    type: "output",
    label: "Output",
    help: "a value the caller gets back",
    fields: [
      { name: "key", label: "Output key", kind: "text", help: "the key in the run's outputs" },
      { name: "from", label: "From node", kind: "node" },
    ],
  },
];

export const mediaKinds = ["speech", "music", "video"];

export const kindOf = (type: string) => kinds.find((k) => k.type === type);


// NodeData is a node and what the canvas shows on it: the API's problems,
// and on a run's graph the node's status.
export type NodeData = { node: GraphNode; problems: Problem[]; status?: string; detail?: string };
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
    case "speech":
      return { id, type, text: "" };
    case "music":
    case "video":
      return { id, type, prompt: "" };
    default:
      return { id, type, template: "" };
  }
}

const kindRank: Record<string, number> = { input: 0, prompt: 1, guardrail: 2, model: 2, speech: 3, music: 3, video: 3, output: 4 };

// Node boxes as the canvas draws them (editor.css), for the layout.
const nodeW = 200;
const nodeH = 90;

// layout places the graph left to right with dagre: each node in the rank
// of its longest path from a source, crossings kept few.
export function layout(g: Graph, sizes: Record<string, { width?: number; height?: number }> = {}): Record<string, { x: number; y: number }> {
  const d = new dagre.graphlib.Graph();
  d.setGraph({ rankdir: "LR", nodesep: 40, ranksep: 70, marginx: 20, marginy: 20 });
  d.setDefaultEdgeLabel(() => ({}));
  const known = new Set(g.nodes.map((n) => n.id));
  for (const n of g.nodes) d.setNode(n.id, { width: sizes[n.id]?.width || nodeW, height: sizes[n.id]?.height || nodeH });
  const linked = new Set<string>();
  for (const e of g.edges)
    if (known.has(e.from) && known.has(e.to)) {
      d.setEdge(e.from, e.to);
      linked.add(e.from).add(e.to);
    }
  // A node without edges yet (just added) goes in its kind's column:
  // inputs first, outputs last, by hint edges the drawing never shows.
  const groups: string[][] = [];
  for (const n of g.nodes) if (!linked.has(n.id)) (groups[kindRank[n.type] ?? 2] ||= []).push(n.id);
  const ranked = groups.filter((x) => x && x.length);
  for (let i = 1; i < ranked.length; i++) for (const id of ranked[i]) d.setEdge(ranked[i - 1][0], id);
  dagre.layout(d);
  const out: Record<string, { x: number; y: number }> = {};
  for (const n of g.nodes) {
    const p = d.node(n.id);
    const w = sizes[n.id]?.width || nodeW;
    const h = sizes[n.id]?.height || nodeH;
    // dagre gives centres; React Flow wants top-left corners.
    out[n.id] = { x: Math.round(p.x - w / 2), y: Math.round(p.y - h / 2) };
  }
  return out;
}

// layoutFlow lays out the canvas's own nodes, measured as drawn.
export function layoutFlow(nodes: FlowNode[], edges: Edge[]): Record<string, { x: number; y: number }> {
  const sizes: Record<string, { width?: number; height?: number }> = {};
  for (const n of nodes) sizes[n.id] = { width: n.measured?.width, height: n.measured?.height };
  return layout(fromFlow(nodes, edges), sizes);
}

// placeNew finds a free place for a node added to a canvas laid out by
// hand: where the layout would put it, moved down until it overlaps none.
export function placeNew(id: string, nodes: FlowNode[], edges: Edge[], extra: FlowNode): { x: number; y: number } {
  const at = layoutFlow([...nodes, extra], edges)[id];
  const overlaps = (p: { x: number; y: number }) =>
    nodes.some((n) => Math.abs(n.position.x - p.x) < nodeW && Math.abs(n.position.y - p.y) < (n.measured?.height || nodeH) + 10);
  const p = { ...at };
  for (let i = 0; i < 50 && overlaps(p); i++) p.y += nodeH + 20;
  return p;
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
    case "speech":
      if (!t.text) t.text = `{{${source}}}`;
      break;
    case "music":
    case "video":
      if (!t.prompt) t.prompt = `{{${source}}}`;
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
    case "speech":
      return [n.model || "default model", n.voice ? `voice ${n.voice}` : "default voice"].join(" · ");
    case "music":
      return [n.model || "default model", n.seconds ? `${n.seconds} s` : "default length"].join(" · ");
    case "video":
      return [n.model || "default model", n.seconds ? `${n.seconds} s` : "shortest length", n.aspectRatio || "16:9"].join(" · ");
  }
  return "";
}
