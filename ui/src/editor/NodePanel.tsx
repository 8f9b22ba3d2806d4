import { useEffect, useState } from "react";
import type { Edge } from "@xyflow/react";
import type { GraphNode, Problem } from "../api";
import { kindOf, type FieldSpec } from "./graph";
import { AspectPicker, JsonField, MediaModelPicker, RulesField, SecondsPicker, TemplateField, TextModelPicker, VoicePicker } from "./fields";

type Props = {
  node: GraphNode;
  problems: Problem[];
  edges: Edge[];
  others: string[];
  // nodeIds are every other node's id (what a template or a node field may
  // name).
  nodeIds: string[];
  onChange: (n: GraphNode) => void;
  onRename: (from: string, to: string) => string | null;
  onConnect: (from: string, to: string) => void;
  onDisconnect: (edgeId: string) => void;
  onDelete: () => void;
};

// NodePanel edits the selected node's fields and its connections; it is
// the keyboard way to do everything the canvas does with a mouse.
export function NodePanel({ node, problems, edges, others, nodeIds, onChange, onRename, onConnect, onDisconnect, onDelete }: Props) {
  const k = kindOf(node.type);
  const [id, setId] = useState(node.id);
  const [renameError, setRenameError] = useState<string | null>(null);
  const [target, setTarget] = useState("");
  useEffect(() => {
    setId(node.id);
    setRenameError(null);
  }, [node.id]);
  const fieldProblems = (f: string) => problems.filter((p) => p.field === f);
  const set = (f: string, v: unknown) => onChange({ ...node, [f]: v });
  const outgoing = edges.filter((e) => e.source === node.id);
  const incoming = edges.filter((e) => e.target === node.id);
  const upstream = incoming.map((e) => e.source);
  const ctx: FieldContext = { node, upstream, nodeIds, use: (from: string) => onConnect(from, node.id) };
  const fields: FieldSpec[] =
    k?.fields.filter((f) => !f.showIf || f.showIf(node)) ??
    Object.keys(node)
      .filter((f) => f !== "id" && f !== "type")
      .map((f) => ({ name: f, label: f, kind: typeof node[f] === "number" ? "number" : typeof node[f] === "string" ? "text" : "json" }));

  return (
    <section className="panel" aria-labelledby="panel-h">
      <h2 id="panel-h">
        {k?.label ?? node.type} <span className="mono">{node.id}</span>
      </h2>
      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          setRenameError(onRename(node.id, id.trim()));
        }}
      >
        <label>
          Node id
          <input value={id} onChange={(e) => setId(e.target.value)} aria-invalid={!!renameError} />
        </label>
        <button type="submit" disabled={id.trim() === node.id}>
          Rename
        </button>
      </form>
      {renameError && <p role="alert" className="error">{renameError}</p>}
      {problems
        .filter((p) => !p.field || !fields.some((f) => f.name === p.field))
        .map((p, i) => (
          <p key={i} className="error">
            {p.field ? `${p.field}: ` : ""}
            {p.message}
          </p>
        ))}
      {fields.map((f) => (
        <Field key={`${node.id}.${f.name}`} spec={f} ctx={ctx} value={node[f.name]} problems={fieldProblems(f.name)} onChange={(v) => set(f.name, v)} />
      ))}
      <h3>Connections</h3>
      <ul className="plain">
        {incoming.map((e) => (
          <li key={e.id}>
            from <span className="mono">{e.source}</span>{" "}
            <button type="button" onClick={() => onDisconnect(e.id)} aria-label={`Remove the edge from ${e.source}`}>
              Remove
            </button>
          </li>
        ))}
        {outgoing.map((e) => (
          <li key={e.id}>
            to <span className="mono">{e.target}</span>{" "}
            <button type="button" onClick={() => onDisconnect(e.id)} aria-label={`Remove the edge to ${e.target}`}>
              Remove
            </button>
          </li>
        ))}
        {incoming.length + outgoing.length === 0 && <li>none</li>}
      </ul>
      {node.type !== "output" && (
        <form
          className="row"
          onSubmit={(e) => {
            e.preventDefault();
            if (target) onConnect(node.id, target);
            setTarget("");
          }}
        >
          <label>
            Connect to
            <select value={target} onChange={(e) => setTarget(e.target.value)}>
              <option value="">choose a node</option>
              {others.map((o) => (
                <option key={o} value={o}>
                  {o}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" disabled={!target}>
            Connect
          </button>
        </form>
      )}
      <button type="button" className="danger" onClick={onDelete}>
        Delete node {node.id}
      </button>
    </section>
  );
}

type FieldContext = { node: GraphNode; upstream: string[]; nodeIds: string[]; use: (from: string) => void };

function Field({ spec, ctx, value, problems, onChange }: { spec: FieldSpec; ctx: FieldContext; value: any; problems: Problem[]; onChange: (v: unknown) => void }) {
  const id = `field-${spec.name}`;
  const help = spec.help ? `${id}-help` : undefined;
  const err = problems.length ? `${id}-err` : undefined;
  const describedBy = [help, err].filter(Boolean).join(" ") || undefined;
  const common = { id, "aria-describedby": describedBy, "aria-invalid": problems.length > 0 || undefined };
  let input;
  switch (spec.kind) {
    case "checkbox":
      return (
        <div className="field">
          <label className="inline">
            <input type="checkbox" {...common} checked={value !== false} onChange={(e) => onChange(e.target.checked)} />
            {spec.label}
          </label>
          <Notes help={help} text={spec.help} err={err} problems={problems} />
        </div>
      );
    case "textarea":
      input = <textarea {...common} rows={3} value={value ?? ""} onChange={(e) => onChange(e.target.value)} />;
      break;
    case "template":
      input = <TemplateField common={common} value={value} upstream={ctx.upstream} others={ctx.nodeIds} onChange={onChange} onUse={ctx.use} />;
      break;
    case "node":
      input = (
        <select {...common} value={value ?? ""} onChange={(e) => onChange(e.target.value)}>
          <option value="">choose a node</option>
          {value && !ctx.nodeIds.includes(value) && <option value={value}>{value} (no such node)</option>}
          {ctx.nodeIds.map((o) => (
            <option key={o} value={o}>
              {o}
              {ctx.upstream.includes(o) ? " (upstream)" : ""}
            </option>
          ))}
        </select>
      );
      break;
    case "rules":
      return (
        <fieldset className="field">
          <legend>{spec.label}</legend>
          <RulesField common={common} value={value} onChange={onChange} />
          <Notes help={help} text={spec.help} err={err} problems={problems} />
        </fieldset>
      );
    case "textModel":
      input = <TextModelPicker common={common} value={value} onChange={onChange} />;
      break;
    case "mediaModel":
      input = <MediaModelPicker common={common} node={ctx.node} onChange={onChange} />;
      break;
    case "voice":
      input = <VoicePicker common={common} node={ctx.node} onChange={onChange} />;
      break;
    case "seconds":
      input = <SecondsPicker common={common} node={ctx.node} onChange={onChange} />;
      break;
    case "aspectRatio":
      input = <AspectPicker common={common} value={value} onChange={onChange} />;
      break;
    case "number":
      input = (
        <input
          {...common}
          type="number"
          step="any"
          value={value ?? ""}
          onChange={(e) => onChange(e.target.value === "" ? undefined : Number(e.target.value))}
        />
      );
      break;
    case "select":
      input = (
        <select {...common} value={value ?? ""} onChange={(e) => onChange(e.target.value)}>
          {spec.options!.map((o) => (
            <option key={o} value={o}>
              {o || "none"}
            </option>
          ))}
        </select>
      );
      break;
    case "json":
      input = <JsonField common={common} value={value} onChange={onChange} />;
      break;
    default:
      input = <input {...common} value={value ?? ""} onChange={(e) => onChange(e.target.value)} />;
  }
  return (
    <div className="field">
      <label htmlFor={id}>{spec.label}</label>
      {input}
      <Notes help={help} text={spec.help} err={err} problems={problems} />
    </div>
  );
}

function Notes({ help, text, err, problems }: { help?: string; text?: string; err?: string; problems: Problem[] }) {
  return (
    <>
      {help && (
        <p id={help} className="muted small">
          {text}
        </p>
      )}
      {err && (
        <p id={err} className="error small">
          {problems.map((p) => p.message).join("; ")}
        </p>
      )}
    </>
  );
}
