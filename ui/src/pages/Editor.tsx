import { useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent } from "react";
import {
  Background,
  Controls,
  ReactFlow,
  ReactFlowProvider,
  addEdge,
  useEdgesState,
  useNodesState,
  useReactFlow,
  type Connection,
  type Edge,
} from "@xyflow/react";
import { ApiError, get, post, put, type Graph, type GraphNode, type Pipeline, type Problem } from "../api";
import { ErrorNote, Live, Page, useLoad } from "../ui";
import { PipelineNode } from "../editor/PipelineNode";
import { NodePanel } from "../editor/NodePanel";
import { fillOnConnect, flowEdge, fromFlow, kinds, layoutFlow, newNode, placeNew, toFlow, type FlowNode } from "../editor/graph";
import "../editor/editor.css";
import { Versions } from "./Versions";
import { TryIt } from "./TryIt";
import { Snippets } from "./Snippets";

const nodeTypes = { pipeline: PipelineNode };
const tabs = ["Editor", "Versions", "Try it", "Use from code"] as const;
type Tab = (typeof tabs)[number];

const layoutKey = (id: string) => `conduit.layout.${id}`;

export function Editor({ id }: { id: string }) {
  const pl = useLoad(() => get<Pipeline>(`/api/pipelines/${encodeURIComponent(id)}`), [id]);
  const [tab, setTab] = useState<Tab>("Editor");
  const tabRefs = useRef<(HTMLButtonElement | null)[]>([]);
  const onTabKey = (e: KeyboardEvent, i: number) => {
    const d = e.key === "ArrowRight" ? 1 : e.key === "ArrowLeft" ? -1 : 0;
    if (!d) return;
    e.preventDefault();
    const j = (i + d + tabs.length) % tabs.length;
    setTab(tabs[j]);
    tabRefs.current[j]?.focus();
  };
  const p = pl.data;
  return (
    <Page title={p ? `Pipeline: ${p.name}` : "Pipeline"}>
      <ErrorNote error={pl.error} />
      {p && (
        <>
          <p className="muted">
            <span className="mono">{p.id}</span> · serving version:{" "}
            <strong data-testid="serving-version">{p.servingVersion ?? "none (not published)"}</strong>
          </p>
          <div role="tablist" aria-label="Pipeline views" className="tabs">
            {tabs.map((t, i) => (
              <button
                key={t}
                role="tab"
                id={`tab-${i}`}
                aria-selected={tab === t}
                aria-controls={`tabpanel-${i}`}
                tabIndex={tab === t ? 0 : -1}
                ref={(el) => {
                  tabRefs.current[i] = el;
                }}
                onClick={() => setTab(t)}
                onKeyDown={(e) => onTabKey(e, i)}
              >
                {t}
              </button>
            ))}
          </div>
          {tabs.map((t, i) => (
            <div key={t} role="tabpanel" id={`tabpanel-${i}`} aria-labelledby={`tab-${i}`} hidden={tab !== t}>
              {/* The editor stays mounted, so unsaved changes survive a look at another tab. */}
              {t === "Editor" && (
                <ReactFlowProvider>
                  <Canvas pipeline={p} onSaved={pl.reload} />
                </ReactFlowProvider>
              )}
              {t === "Versions" && tab === t && <Versions pipeline={p} onChanged={pl.reload} />}
              {t === "Try it" && tab === t && <TryIt pipeline={p} />}
              {t === "Use from code" && tab === t && <Snippets pipeline={p} />}
            </div>
          ))}
        </>
      )}
    </Page>
  );
}

function Canvas({ pipeline, onSaved }: { pipeline: Pipeline; onSaved: () => void }) {
  const initial = useMemo(() => {
    const g: Graph = (pipeline.draft as Graph) ?? { nodes: [], edges: [] };
    let saved: Record<string, { x: number; y: number }> = {};
    try {
      saved = JSON.parse(localStorage.getItem(layoutKey(pipeline.id)) || "{}");
    } catch {
      saved = {};
    }
    return { ...toFlow({ nodes: g.nodes ?? [], edges: g.edges ?? [] }, saved), placed: Object.keys(saved).length > 0 };
    // Only the first load: later reloads keep the canvas as it is.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [pipeline.id]);
  const [nodes, setNodes, onNodesChange] = useNodesState<FlowNode>(initial.nodes);
  const [edges, setEdges, onEdgesChange] = useEdgesState<Edge>(initial.edges);
  const [selected, setSelected] = useState<string | null>(null);
  const [problems, setProblems] = useState<Problem[]>(pipeline.draftValidation?.problems ?? []);
  const [valid, setValid] = useState<boolean | undefined>(pipeline.draftValidation?.valid);
  const [dirty, setDirty] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState("");
  const [note, setNote] = useState("");
  const flow = useReactFlow();
  const [refit, setRefit] = useState(0);
  // Until someone places a node by hand, the layout keeps the whole graph
  // tidy as nodes are added; after that a new node takes a free place and
  // "Tidy layout" lays everything out again on demand. (A new edge moves
  // nothing: the node being dragged to stays where the pointer is.)
  const [placedByHand, setPlacedByHand] = useState(initial.placed);
  const [relayout, setRelayout] = useState(0);
  useEffect(() => {
    if (!relayout) return;
    setNodes((ns) => {
      const pos = layoutFlow(ns, edges);
      return ns.map((n) => (pos[n.id] ? { ...n, position: pos[n.id] } : n));
    });
    setRefit((r) => r + 1);
    // Only on request: edges are read as they are at that moment.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [relayout]);
  // A new node may land outside the view: show the whole graph again.
  useEffect(() => {
    if (refit) window.requestAnimationFrame(() => flow.fitView({ maxZoom: 1, padding: 0.15 }));
  }, [refit, flow]);
  // A window resized (the layout changes below 1100 px) shows the whole
  // graph again.
  useEffect(() => {
    const f = () => setRefit((r) => r + 1);
    window.addEventListener("resize", f);
    return () => window.removeEventListener("resize", f);
  }, []);

  // Problems show on their nodes.
  useEffect(() => {
    setNodes((ns) =>
      ns.map((n) => {
        const mine = problems.filter((p) => p.node === n.id);
        return JSON.stringify(mine) === JSON.stringify(n.data.problems) ? n : { ...n, data: { ...n.data, problems: mine } };
      }),
    );
  }, [problems, nodes.length, setNodes]);

  // Positions are kept in this browser (the graph format has no place for
  // them).
  useEffect(() => {
    const pos: Record<string, { x: number; y: number }> = {};
    for (const n of nodes) pos[n.id] = n.position;
    localStorage.setItem(layoutKey(pipeline.id), JSON.stringify(pos));
  }, [nodes, pipeline.id]);

  const touch = () => {
    setDirty(true);
    setNotice("");
  };

  const add = (type: string) => {
    const n = newNode(
      type,
      nodes.map((x) => x.data.node),
    );
    setNodes((ns) => {
      const fresh: FlowNode = { id: n.id, type: "pipeline", position: { x: 0, y: 0 }, data: { node: n, problems: [] }, selected: true };
      fresh.position = placedByHand ? placeNew(n.id, ns, edges, fresh) : layoutFlow([...ns, fresh], edges)[n.id];
      const all = [...ns.map((x) => (x.selected ? { ...x, selected: false } : x)), fresh];
      if (placedByHand) return all;
      const pos = layoutFlow(all, edges);
      return all.map((x) => ({ ...x, position: pos[x.id] ?? x.position }));
    });
    setSelected(n.id);
    touch();
    setRefit((r) => r + 1);
    setNotice(`Added ${n.id}.`);
  };

  const connect = useCallback(
    (from: string, to: string) => {
      if (from === to) return;
      setEdges((es) => (es.some((e) => e.source === from && e.target === to) ? es : addEdge(flowEdge(from, to), es)));
      setNodes((ns) => ns.map((n) => (n.id === to ? { ...n, data: { ...n.data, node: fillOnConnect(n.data.node, from) } } : n)));
      setDirty(true);
      setNotice(`Connected ${from} to ${to}.`);
    },
    [setEdges, setNodes],
  );
  const onConnect = useCallback((c: Connection) => c.source && c.target && connect(c.source, c.target), [connect]);

  const update = (n: GraphNode) => {
    setNodes((ns) => ns.map((x) => (x.id === n.id ? { ...x, data: { ...x.data, node: n } } : x)));
    touch();
  };

  const rename = (from: string, to: string): string | null => {
    if (!/^[A-Za-z][A-Za-z0-9_-]*$/.test(to)) return "An id starts with a letter and has letters, digits, _ and - only.";
    if (nodes.some((n) => n.id === to)) return `${to} is taken.`;
    const re = new RegExp(`\\{\\{\\s*${from}(?=[\\s.\\[}])`, "g");
    const fix = (n: GraphNode): GraphNode => {
      const o: GraphNode = { ...n, id: n.id === from ? to : n.id };
      for (const f of ["from", "input", "source"]) if (o[f] === from) o[f] = to;
      for (const f of ["template", "prompt", "system", "text"]) if (typeof o[f] === "string") o[f] = o[f].replace(re, `{{${to}`);
      return o;
    };
    setNodes((ns) => ns.map((n) => ({ ...n, id: n.id === from ? to : n.id, data: { ...n.data, node: fix(n.data.node) } })));
    setEdges((es) =>
      es.map((e) => (e.source === from || e.target === from ? flowEdge(e.source === from ? to : e.source, e.target === from ? to : e.target) : e)),
    );
    setSelected(to);
    touch();
    return null;
  };

  const remove = (nid: string) => {
    setNodes((ns) => ns.filter((n) => n.id !== nid));
    setEdges((es) => es.filter((e) => e.source !== nid && e.target !== nid));
    setSelected(null);
    touch();
    setNotice(`Deleted ${nid}.`);
  };

  const save = async (): Promise<boolean> => {
    setBusy(true);
    setError(null);
    try {
      const g = fromFlow(nodes, edges);
      const res = await put<Pipeline>(`/api/pipelines/${encodeURIComponent(pipeline.id)}/draft`, { draft: g });
      setProblems(res.draftValidation?.problems ?? []);
      setValid(res.draftValidation?.valid);
      setDirty(false);
      setNotice(res.draftValidation?.valid ? "Draft saved." : `Draft saved with ${res.draftValidation?.problems.length} problem(s).`);
      return !!res.draftValidation?.valid;
    } catch (e) {
      if (e instanceof ApiError && Array.isArray(e.body?.problems)) setProblems(e.body.problems);
      setError(e);
      return false;
    } finally {
      setBusy(false);
    }
  };

  const publish = async () => {
    if (!(await save())) return;
    setBusy(true);
    try {
      const res = await post<{ version?: number; servingVersion?: number }>(
        `/api/pipelines/${encodeURIComponent(pipeline.id)}/publish`,
        note.trim() ? { note: note.trim() } : {},
      );
      setNotice(`Published version ${res.servingVersion ?? res.version ?? ""}.`);
      setNote("");
      onSaved();
    } catch (e) {
      if (e instanceof ApiError && Array.isArray(e.body?.problems)) setProblems(e.body.problems);
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  const sel = nodes.find((n) => n.id === selected);
  const general = problems.filter((p) => !p.node);

  return (
    <div className="editor">
      <section className="palette" aria-labelledby="palette-h">
        <h2 id="palette-h">Add a node</h2>
        <ul className="plain">
          {kinds.map((k) => (
            <li key={k.type}>
              <button type="button" onClick={() => add(k.type)} aria-label={`Add ${k.label} node`} data-kind={k.type}>
                + {k.label}
              </button>
              <span className="muted small">{k.help}</span>
            </li>
          ))}
        </ul>
        <label className="small">
          Version note (optional)
          <input name="versionNote" value={note} maxLength={500} onChange={(e) => setNote(e.target.value)} placeholder="what this version changes" />
        </label>
        <div className="toolbar">
          <button
            type="button"
            onClick={() => {
              setPlacedByHand(false);
              setRelayout((r) => r + 1);
              setDirty(true);
              setNotice("Laid out the graph.");
            }}
          >
            Tidy layout
          </button>
          <button type="button" onClick={save} disabled={busy}>
            Save draft
          </button>
          <button type="button" className="primary" onClick={publish} disabled={busy}>
            Publish
          </button>
        </div>
        <p className="small">
          {dirty ? "Unsaved changes." : valid === undefined ? "" : valid ? "The draft is valid." : "The draft has problems (shown on the nodes)."}
        </p>
        <Live>{notice}</Live>
        <ErrorNote error={error} />
        {general.length > 0 && (
          <ul className="error" aria-label="Problems of the whole graph">
            {general.map((p, i) => (
              <li key={i}>{p.message}</li>
            ))}
          </ul>
        )}
      </section>
      <div className="canvas" role="region" aria-label="Pipeline graph canvas">
        <ReactFlow
          nodes={nodes}
          edges={edges}
          nodeTypes={nodeTypes}
          onNodesChange={(c) => {
            onNodesChange(c);
            if (c.some((x) => x.type === "position" && x.dragging === false)) setPlacedByHand(true);
            if (c.some((x) => x.type === "position" && x.dragging === false) || c.some((x) => x.type === "remove")) setDirty(true);
          }}
          onEdgesChange={(c) => {
            onEdgesChange(c);
            if (c.some((x) => x.type === "remove")) setDirty(true);
          }}
          onConnect={onConnect}
          onNodeClick={(_, n) => setSelected(n.id)}
          onSelectionChange={({ nodes: s }) => s.length === 1 && setSelected(s[0].id)}
          onNodesDelete={(ds) => ds.some((d) => d.id === selected) && setSelected(null)}
          fitView
          fitViewOptions={{ maxZoom: 1 }}
          minZoom={0.3}
          maxZoom={1.5}
          deleteKeyCode={["Delete", "Backspace"]}
          proOptions={{ hideAttribution: false }}
        >
          <Background />
          <Controls />
        </ReactFlow>
      </div>
      <aside className="side" aria-label="Node settings">
        {sel ? (
          <NodePanel
            node={sel.data.node}
            problems={sel.data.problems}
            edges={edges}
            others={nodes.filter((n) => n.id !== sel.id && n.data.node.type !== "input").map((n) => n.id)}
            nodeIds={nodes.filter((n) => n.id !== sel.id && n.data.node.type !== "output").map((n) => n.id)}
            onChange={update}
            onRename={rename}
            onConnect={connect}
            onDisconnect={(eid) => (setEdges((es) => es.filter((e) => e.id !== eid)), touch())}
            onDelete={() => remove(sel.id)}
          />
        ) : (
          <>
            <h2>Node settings</h2>
            <p>Select a node on the canvas (click it, or Tab to it and press Enter) to edit its fields.</p>
            <p className="small muted">
              Connect nodes by dragging from a node's right handle to another node's left handle, or with “Connect to” in this panel.
            </p>
            <h3>Nodes</h3>
            <ul className="plain">
              {nodes.map((n) => (
                <li key={n.id}>
                  <button type="button" onClick={() => setSelected(n.id)}>
                    Edit {n.id}
                  </button>
                </li>
              ))}
            </ul>
          </>
        )}
      </aside>
    </div>
  );
}

