// The node panel's richer fields: catalog pickers with prices, the
// guardrail rules form, and templates with {{variable}} autocomplete.
import { useId, useRef, useState, type KeyboardEvent } from "react";
import { usd, type GraphNode } from "../api";
import { menuModel, modelLabel, priceFor, useCatalog, type Menu } from "./catalog";

type Common = { id: string; "aria-describedby"?: string; "aria-invalid"?: boolean };

// TextModelPicker chooses a catalog model; a model the catalog does not
// know (an old graph) stays selectable so nothing changes unseen.
export function TextModelPicker({ common, value, onChange }: { common: Common; value?: string; onChange: (v: unknown) => void }) {
  const { catalog, error } = useCatalog();
  const models = catalog?.models ?? [];
  const known = models.some((m) => m.id === value);
  return (
    <>
      <select {...common} value={value ?? ""} onChange={(e) => onChange(e.target.value || undefined)}>
        <option value="">choose a model</option>
        {value && !known && <option value={value}>{value} (not in the catalog)</option>}
        {models.map((m) => (
          <option key={m.id} value={m.id}>
            {modelLabel(m)}
          </option>
        ))}
      </select>
      {error ? <p className="error small">The model catalog did not load: {String((error as Error).message ?? error)}</p> : null}
    </>
  );
}

const menuOf = (catalog: { media: Record<string, Menu> } | undefined, kind: string) => catalog?.media?.[kind];

// MediaModelPicker chooses a generation node's model from its kind's menu;
// empty means the menu's default.
export function MediaModelPicker({ common, node, onChange }: { common: Common; node: GraphNode; onChange: (v: unknown) => void }) {
  const { catalog } = useCatalog();
  const menu = menuOf(catalog, node.type);
  const def = menuModel(menu, undefined);
  const label = (m: NonNullable<Menu["models"]>[number]) => {
    const from = m.prices?.length ? `, from ${usd(Math.min(...m.prices.map((p) => p.priceUsd)))} USD` : "";
    return `${m.label || m.id}${from}`;
  };
  return (
    <select {...common} value={node.model ?? ""} onChange={(e) => onChange(e.target.value || undefined)}>
      <option value="">{def ? `default (${label(def)})` : "default"}</option>
      {(menu?.models ?? []).map((m) => (
        <option key={m.id} value={m.id}>
          {label(m)}
        </option>
      ))}
    </select>
  );
}

export function VoicePicker({ common, node, onChange }: { common: Common; node: GraphNode; onChange: (v: unknown) => void }) {
  const { catalog } = useCatalog();
  const menu = menuOf(catalog, "speech");
  const voices = menu?.voices ?? [];
  const def = voices.find((v) => v.default);
  const label = (v: (typeof voices)[number]) =>
    `${v.id}${v.description ? ` — ${v.description}` : ""}${v.language ? ` (${v.language})` : ""}${v.priceMultiplier ? `, ×${v.priceMultiplier} price` : ""}`;
  return (
    <>
      <select {...common} value={node.voice ?? ""} onChange={(e) => onChange(e.target.value || undefined)}>
        <option value="">{def ? `default (${def.id})` : "default"}</option>
        {voices.map((v) => (
          <option key={v.id} value={v.id}>
            {label(v)}
          </option>
        ))}
      </select>
      {menu?.pricing && <p className="muted small">{menu.pricing}</p>}
    </>
  );
}

// SecondsPicker offers the lengths the node's model sells, each with its
// price from the menu.
export function SecondsPicker({ common, node, onChange }: { common: Common; node: GraphNode; onChange: (v: unknown) => void }) {
  const { catalog } = useCatalog();
  const menu = menuOf(catalog, node.type);
  const m = menuModel(menu, node.model);
  const prices = m?.prices ?? [];
  const chosen = priceFor(menu, node.model, node.seconds);
  return (
    <>
      <select {...common} value={node.seconds ?? ""} onChange={(e) => onChange(e.target.value === "" ? undefined : Number(e.target.value))}>
        <option value="">default</option>
        {prices.map((p) => (
          <option key={p.seconds} value={p.seconds}>
            {p.seconds} s — {usd(p.priceUsd)} USD
          </option>
        ))}
        {node.seconds && !prices.some((p) => p.seconds === node.seconds) && <option value={node.seconds}>{node.seconds} s (not sold by this model)</option>}
      </select>
      {chosen && (
        <p className="muted small" data-testid={`price-${node.id}`}>
          Price per run: {usd(chosen.priceUsd)} USD ({chosen.seconds} s on {m?.label || m?.id})
        </p>
      )}
    </>
  );
}

export function AspectPicker({ common, value, onChange }: { common: Common; value?: string; onChange: (v: unknown) => void }) {
  const { catalog } = useCatalog();
  const ratios = menuOf(catalog, "video")?.limits?.aspectRatio ?? ["16:9", "9:16"];
  return (
    <select {...common} value={value ?? ""} onChange={(e) => onChange(e.target.value || undefined)}>
      <option value="">default (16:9)</option>
      {ratios.map((r) => (
        <option key={r} value={r}>
          {r} (same price)
        </option>
      ))}
    </select>
  );
}

// Guardrail rules (docs/pipelines.md, "Guardrail rules").
type Rule = { kind: string; value?: number; pattern?: string; patterns?: string[]; fields?: string[] };
const ruleKinds: { kind: string; label: string }[] = [
  { kind: "maxLength", label: "at most N characters" },
  { kind: "minLength", label: "at least N characters" },
  { kind: "regex", label: "must match a pattern" },
  { kind: "deny", label: "must match none of these patterns" },
  { kind: "pii", label: "no personal data" },
  { kind: "requiredFields", label: "a JSON object with these fields" },
];

function blankRule(kind: string): Rule {
  switch (kind) {
    case "maxLength":
      return { kind, value: 2000 };
    case "minLength":
      return { kind, value: 1 };
    case "regex":
      return { kind, pattern: "" };
    case "deny":
      return { kind, patterns: [] };
    case "requiredFields":
      return { kind, fields: [] };
  }
  return { kind };
}

// RulesField edits the rules as a form; the raw JSON is an advanced view of
// the same value.
export function RulesField({ common, value, onChange }: { common: Common; value: unknown; onChange: (v: unknown) => void }) {
  const [raw, setRaw] = useState(false);
  const rules: Rule[] = Array.isArray(value) ? (value as Rule[]) : [];
  const set = (i: number, r: Rule) => onChange(rules.map((x, j) => (j === i ? r : x)));
  const base = common.id;
  return (
    <div className="rules" id={base} aria-describedby={common["aria-describedby"]}>
      <label className="inline small">
        <input type="checkbox" checked={raw} onChange={(e) => setRaw(e.target.checked)} /> Edit as JSON (advanced)
      </label>
      {raw ? (
        <JsonText id={`${base}-json`} label="Rules as JSON" value={value} onChange={onChange} />
      ) : (
        <ol className="rule-list">
          {rules.map((r, i) => (
            <li key={i} className="rule">
              <label>
                Rule {i + 1}
                <select value={r.kind} onChange={(e) => set(i, blankRule(e.target.value))}>
                  {ruleKinds.map((k) => (
                    <option key={k.kind} value={k.kind}>
                      {k.kind}: {k.label}
                    </option>
                  ))}
                  {!ruleKinds.some((k) => k.kind === r.kind) && <option value={r.kind}>{r.kind}</option>}
                </select>
              </label>
              {(r.kind === "maxLength" || r.kind === "minLength") && (
                <label>
                  Characters
                  <input type="number" min={0} value={r.value ?? ""} onChange={(e) => set(i, { ...r, value: e.target.value === "" ? undefined : Number(e.target.value) })} />
                </label>
              )}
              {r.kind === "regex" && (
                <label>
                  Pattern
                  <input className="mono" value={r.pattern ?? ""} onChange={(e) => set(i, { ...r, pattern: e.target.value })} />
                </label>
              )}
              {r.kind === "deny" && (
                <label>
                  Patterns (one a line)
                  <textarea
                    className="mono"
                    rows={2}
                    value={(r.patterns ?? []).join("\n")}
                    onChange={(e) => set(i, { ...r, patterns: e.target.value.split("\n") })}
                    onBlur={(e) => set(i, { ...r, patterns: e.target.value.split("\n").filter((x) => x !== "") })}
                  />
                </label>
              )}
              {r.kind === "requiredFields" && (
                <label>
                  Fields (comma-separated)
                  <input
                    value={(r.fields ?? []).join(",")}
                    onChange={(e) =>
                      set(i, {
                        ...r,
                        fields: e.target.value
                          .split(",")
                          .map((x) => x.trim())
                          .filter((x, j, a) => x !== "" || j === a.length - 1),
                      })
                    }
                  />
                </label>
              )}
              <button type="button" onClick={() => onChange(rules.filter((_, j) => j !== i))} aria-label={`Remove rule ${i + 1}`}>
                Remove
              </button>
            </li>
          ))}
        </ol>
      )}
      {!raw && (
        <button type="button" onClick={() => onChange([...rules, blankRule("maxLength")])}>
          Add a rule
        </button>
      )}
    </div>
  );
}

function JsonText({ id, label, value, onChange }: { id: string; label: string; value: unknown; onChange: (v: unknown) => void }) {
  return (
    <>
      <label htmlFor={id} className="small">
        {label}
      </label>
      <JsonField common={{ id }} rows={4} indent={1} value={value} onChange={onChange} />
    </>
  );
}

// JsonField edits a value as JSON text; while the text does not parse,
// the last valid value is kept.
export function JsonField({
  common,
  value,
  onChange,
  rows = 3,
  indent,
}: {
  common: Record<string, unknown>;
  value: unknown;
  onChange: (v: unknown) => void;
  rows?: number;
  indent?: number;
}) {
  const [text, setText] = useState(value === undefined ? "" : JSON.stringify(value, null, indent));
  const [bad, setBad] = useState(false);
  return (
    <>
      <textarea
        {...common}
        rows={rows}
        className="mono"
        value={text}
        onChange={(e) => {
          setText(e.target.value);
          try {
            onChange(e.target.value.trim() === "" ? undefined : JSON.parse(e.target.value));
            setBad(false);
          } catch {
            setBad(true);
          }
        }}
      />
      {bad && <p className="error small">Not valid JSON yet: the last valid value is kept.</p>}
    </>
  );
}

// TemplateField is a textarea whose {{ opens a list of the node ids a
// template may name: the upstream nodes first, then the others (picking
// one of those also draws its edge, as the API requires).
export function TemplateField({
  common,
  value,
  upstream,
  others,
  onChange,
  onUse,
}: {
  common: Common;
  value?: string;
  upstream: string[];
  others: string[];
  onChange: (v: unknown) => void;
  onUse: (id: string) => void;
}) {
  const ref = useRef<HTMLTextAreaElement>(null);
  const listId = useId();
  const [query, setQuery] = useState<string | null>(null);
  const [active, setActive] = useState(0);
  const text = value ?? "";
  const all = [...upstream.map((id) => ({ id, up: true })), ...others.filter((o) => !upstream.includes(o)).map((id) => ({ id, up: false }))];
  const matches = query === null ? [] : all.filter((o) => o.id.toLowerCase().startsWith(query.toLowerCase()));
  const open = matches.length > 0;

  // The open variable is the text between the last {{ before the caret and
  // the caret, when it has no closing braces or spaces.
  const track = (el: HTMLTextAreaElement) => {
    const before = el.value.slice(0, el.selectionStart ?? el.value.length);
    const m = /\{\{\s*([A-Za-z0-9_-]*)$/.exec(before);
    setQuery(m ? m[1] : null);
    setActive(0);
  };
  const insert = (id: string, up: boolean) => {
    const el = ref.current;
    const caret = el?.selectionStart ?? text.length;
    const before = text.slice(0, caret);
    const after = text.slice(caret);
    const m = /\{\{\s*([A-Za-z0-9_-]*)$/.exec(before);
    const head = m ? before.slice(0, m.index) : before;
    const rest = after.replace(/^[A-Za-z0-9_-]*\s*\}\}/, "");
    const next = `${head}{{${id}}}${rest}`;
    onChange(next);
    if (!up) onUse(id);
    setQuery(null);
    window.requestAnimationFrame(() => {
      if (!el) return;
      el.focus();
      const at = head.length + id.length + 4;
      el.setSelectionRange(at, at);
    });
  };
  const onKey = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (!open) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      setActive((a) => (a + (e.key === "ArrowDown" ? 1 : -1) + matches.length) % matches.length);
    } else if (e.key === "Enter" || e.key === "Tab") {
      e.preventDefault();
      insert(matches[active].id, matches[active].up);
    } else if (e.key === "Escape") {
      e.preventDefault();
      setQuery(null);
    }
  };
  return (
    <div className="template">
      <textarea
        {...common}
        ref={ref}
        rows={3}
        value={text}
        role="combobox"
        aria-autocomplete="list"
        aria-expanded={open}
        aria-controls={listId}
        aria-activedescendant={open ? `${listId}-${active}` : undefined}
        onChange={(e) => {
          onChange(e.target.value);
          track(e.target);
        }}
        onKeyDown={onKey}
        onClick={(e) => track(e.currentTarget)}
        onBlur={() => window.setTimeout(() => setQuery(null), 150)}
      />
      <ul id={listId} role="listbox" className="suggest" hidden={!open} aria-label="Variables">
        {matches.map((o, i) => (
          <li
            key={o.id}
            id={`${listId}-${i}`}
            role="option"
            aria-selected={i === active}
            className={i === active ? "active" : ""}
            onMouseDown={(e) => {
              e.preventDefault();
              insert(o.id, o.up);
            }}
          >
            <span className="mono">{`{{${o.id}}}`}</span> {o.up ? <span className="muted small">upstream</span> : <span className="muted small">adds an edge</span>}
          </li>
        ))}
      </ul>
      {upstream.length > 0 && (
        <p className="small vars">
          Insert:{" "}
          {upstream.map((id) => (
            <button key={id} type="button" className="chip" onClick={() => insert(id, true)} aria-label={`Insert {{${id}}}`}>
              {`{{${id}}}`}
            </button>
          ))}
        </p>
      )}
    </div>
  );
}
