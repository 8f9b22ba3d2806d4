import { useState, type FormEvent } from "react";
import { ApiError, del, get, patch, post, when } from "../api";
import { DataTable, FilterForm, Pager, SelectFilter, usePagedList } from "../list";
import { ErrorNote, Live, Page } from "../ui";

// The redaction proxies (docs/redaction-proxies.md): list, create, edit
// and delete; the upstream key is write-only (the API never returns it).

const TYPES = ["NAME", "EMAIL", "PHONE", "ADDRESS", "SSN", "CC", "MRN", "DOB", "ACCOUNT", "URL", "DATE", "SECRET"];
const ACTIONS = ["placeholder", "mask", "hash", "block"];
const STYLES = ["openai", "azure", "anthropic", "custom"];

type Proxy = {
  id: string;
  name: string;
  style: string;
  baseUrl?: string;
  apiVersion?: string;
  models: Record<string, string>;
  defaultModel?: string;
  hasUpstreamKey: boolean;
  policy: { types: string[]; actions?: Record<string, string> };
  output: "restore" | "redact";
  audit: boolean;
  createdAt: string;
};

type Draft = {
  name: string;
  style: string;
  baseUrl: string;
  apiVersion: string;
  models: string;
  defaultModel: string;
  upstreamKey: string;
  types: string[];
  actions: Record<string, string>;
  output: string;
  audit: boolean;
};

const blank: Draft = { name: "", style: "openai", baseUrl: "", apiVersion: "", models: "", defaultModel: "", upstreamKey: "", types: [...TYPES], actions: {}, output: "restore", audit: true };

function draftOf(p: Proxy): Draft {
  return {
    name: p.name,
    style: p.style,
    baseUrl: p.baseUrl ?? "",
    apiVersion: p.apiVersion ?? "",
    models: Object.entries(p.models ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join("\n"),
    defaultModel: p.defaultModel ?? "",
    upstreamKey: "",
    types: p.policy.types,
    actions: p.policy.actions ?? {},
    output: p.output,
    audit: p.audit,
  };
}

function bodyOf(d: Draft, editing: boolean) {
  const models: Record<string, string> = {};
  for (const line of d.models.split("\n")) {
    const [k, v] = line.split("=").map((s) => s.trim());
    if (k && v) models[k] = v;
  }
  const body: Record<string, unknown> = {
    name: d.name,
    style: d.style,
    baseUrl: d.baseUrl,
    apiVersion: d.apiVersion,
    models,
    defaultModel: d.defaultModel,
    policy: { types: d.types, actions: d.actions },
    output: d.output,
    audit: d.audit,
  };
  // Write-only: an empty field keeps the stored key when editing.
  if (d.upstreamKey || !editing) body.upstreamKey = d.upstreamKey;
  return body;
}

function ProxyForm({ initial, editing, onSave, onCancel }: { initial: Draft; editing: boolean; onSave: (body: Record<string, unknown>) => Promise<void>; onCancel?: () => void }) {
  const [d, setD] = useState<Draft>(initial);
  const [error, setError] = useState<unknown>(null);
  const set = <K extends keyof Draft>(k: K, v: Draft[K]) => setD((x) => ({ ...x, [k]: v }));
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      await onSave(bodyOf(d, editing));
      if (!editing) setD(blank);
    } catch (err) {
      setError(err);
    }
  };
  const id = editing ? "edit" : "new";
  return (
    <form onSubmit={submit}>
      <label>
        Name
        <input name={`${id}-name`} required value={d.name} onChange={(e) => set("name", e.target.value)} />
      </label>
      <label>
        Upstream style
        <select name={`${id}-style`} value={d.style} onChange={(e) => set("style", e.target.value)}>
          {STYLES.map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>
      </label>
      <label>
        Base URL {d.style === "azure" || d.style === "custom" ? "(required)" : "(optional)"}
        <input name={`${id}-baseUrl`} type="url" value={d.baseUrl} onChange={(e) => set("baseUrl", e.target.value)} placeholder="https://…" />
      </label>
      {d.style === "azure" && (
        <label>
          API version
          <input name={`${id}-apiVersion`} required value={d.apiVersion} onChange={(e) => set("apiVersion", e.target.value)} placeholder="2024-10-21" />
        </label>
      )}
      <label>
        Model mapping (one <code>requested=upstream</code> per line; for azure the upstream is the deployment)
        <textarea name={`${id}-models`} rows={3} value={d.models} onChange={(e) => set("models", e.target.value)} />
      </label>
      <label>
        Default model or deployment
        <input name={`${id}-defaultModel`} value={d.defaultModel} onChange={(e) => set("defaultModel", e.target.value)} />
      </label>
      <label>
        Upstream key {editing ? "(leave empty to keep the stored one)" : "(optional: callers may send x-model-key instead)"}
        <input name={`${id}-upstreamKey`} type="password" autoComplete="off" value={d.upstreamKey} onChange={(e) => set("upstreamKey", e.target.value)} />
      </label>
      <fieldset>
        <legend>Policy: entity types and what happens to each</legend>
        <table>
          <caption className="sr-only">Entity types</caption>
          <thead>
            <tr>
              <th scope="col">Type</th>
              <th scope="col">Detect</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {TYPES.map((t) => (
              <tr key={t}>
                <th scope="row">{t}</th>
                <td>
                  <input
                    type="checkbox"
                    aria-label={`Detect ${t}`}
                    checked={d.types.includes(t)}
                    onChange={(e) => set("types", e.target.checked ? [...d.types, t] : d.types.filter((x) => x !== t))}
                  />
                </td>
                <td>
                  <select aria-label={`Action for ${t}`} value={d.actions[t] ?? "placeholder"} onChange={(e) => set("actions", { ...d.actions, [t]: e.target.value })}>
                    {ACTIONS.map((a) => (
                      <option key={a}>{a}</option>
                    ))}
                  </select>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </fieldset>
      <label>
        Output
        <select name={`${id}-output`} value={d.output} onChange={(e) => set("output", e.target.value)}>
          <option value="restore">restore placeholders only</option>
          <option value="redact">restore, and redact new PII the model writes</option>
        </select>
      </label>
      <label className="inline">
        <input type="checkbox" checked={d.audit} onChange={(e) => set("audit", e.target.checked)} /> Record every call in the audit log
      </label>
      <ErrorNote error={error} />
      <div className="actions">
        <button type="submit">{editing ? "Save" : "Create proxy"}</button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}

export function ProxyList() {
  const list = usePagedList<{ proxies: Proxy[] }>("/api/proxies", {});
  const [editing, setEditing] = useState<Proxy | null>(null);
  const [note, setNote] = useState("");
  const [error, setError] = useState<unknown>(null);
  const unavailable = list.error instanceof ApiError && list.error.status === 503;
  const remove = async (p: Proxy) => {
    setError(null);
    try {
      await del(`/api/proxies/${encodeURIComponent(p.id)}`);
      setNote(`Proxy ${p.name} deleted.`);
      list.restart();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <Page title="Redaction proxies">
      <p>
        A proxy redacts personal data from chat requests before they reach the upstream model and restores it in the answer. Call{" "}
        <code>POST /api/redact/chat/completions</code> with the header <code>x-svc-proxy</code> naming the proxy.
      </p>
      {unavailable ? <p>Redaction proxies are not enabled on this deployment.</p> : <ErrorNote error={list.error} />}
      <ErrorNote error={error} />
      <Live>{note}</Live>
      <DataTable
        caption="Your redaction proxies"
        rows={list.data?.proxies}
        rowKey={(p) => p.id}
        empty="No proxies yet."
        columns={[
          { header: "Name", cell: (p) => p.name },
          { header: "Style", cell: (p) => p.style },
          { header: "Upstream", className: () => "mono", cell: (p) => p.baseUrl || "default" },
          { header: "Types", cell: (p) => p.policy.types.join(", ") },
          { header: "Output", cell: (p) => p.output },
          { header: "Key stored", cell: (p) => (p.hasUpstreamKey ? "yes" : "no") },
          { header: "Audit", cell: (p) => (p.audit ? "on" : "off") },
          { header: "Created", cell: (p) => when(p.createdAt) },
          {
            header: "Actions",
            cell: (p) => (
              <>
                <button type="button" onClick={() => setEditing(p)} aria-label={`Edit ${p.name}`}>
                  Edit
                </button>{" "}
                <button type="button" onClick={() => remove(p)} aria-label={`Delete ${p.name}`}>
                  Delete
                </button>
              </>
            ),
          },
        ]}
      />
      <Pager list={list} />
      {editing && (
        <section aria-labelledby="edit-proxy-h" className="card">
          <h2 id="edit-proxy-h">Edit {editing.name}</h2>
          <ProxyForm
            key={editing.id}
            initial={draftOf(editing)}
            editing
            onCancel={() => setEditing(null)}
            onSave={async (body) => {
              await patch(`/api/proxies/${encodeURIComponent(editing.id)}`, body);
              setNote(`Proxy ${editing.name} saved.`);
              setEditing(null);
              list.reload();
            }}
          />
        </section>
      )}
      <section aria-labelledby="new-proxy-h" className="card">
        <h2 id="new-proxy-h">Create a proxy</h2>
        <ProxyForm
          initial={blank}
          editing={false}
          onSave={async (body) => {
            const p = await post<Proxy>("/api/proxies", body);
            setNote(`Proxy ${p.name} created.`);
            list.restart();
          }}
        />
      </section>
    </Page>
  );
}

type LogEntry = {
  id: string;
  seq: number;
  ts: string;
  keyId?: string;
  proxyId?: string;
  source: string;
  entityCountsByType: Record<string, number>;
  upstreamStatus: number;
  latencyMs: number;
  hash: string;
};

type Verification = { valid: boolean; entries: number; head: string; brokenAt?: number; reason?: string };

export function RedactionLog() {
  const [source, setSource] = useState("");
  const [applied, setApplied] = useState({ source: "" });
  const list = usePagedList<{ entries: LogEntry[] }>("/api/redact/log", applied);
  const [check, setCheck] = useState<Verification | null>(null);
  const [error, setError] = useState<unknown>(null);
  const verify = async () => {
    setError(null);
    try {
      setCheck(await get<Verification>("/api/redact/log/verify"));
    } catch (err) {
      setError(err);
    }
  };
  return (
    <Page title="Redaction log">
      <p>Every redacting call: when, which key and proxy, how many values of each type were redacted, the upstream's status and the latency — never a value. The entries form a hash chain.</p>
      <FilterForm onApply={() => setApplied({ source })} onRefresh={list.restart}>
        <SelectFilter
          label="Source"
          name="source"
          value={source}
          onChange={setSource}
          anyLabel="any"
          options={[
            { value: "proxy", label: "chat proxy" },
            { value: "run", label: "text redaction" },
          ]}
        />
      </FilterForm>
      <ErrorNote error={list.error} />
      <DataTable
        caption="Redaction log entries"
        rows={list.data?.entries}
        rowKey={(e) => e.id}
        empty="No redacting calls yet."
        columns={[
          { header: "#", num: true, cell: (e) => e.seq },
          { header: "Time", cell: (e) => when(e.ts) },
          { header: "Source", cell: (e) => e.source },
          { header: "Proxy", className: () => "mono", cell: (e) => e.proxyId || "–" },
          { header: "Key", className: () => "mono", cell: (e) => e.keyId || "–" },
          {
            header: "Entities",
            cell: (e) =>
              Object.entries(e.entityCountsByType)
                .map(([t, n]) => `${t} ${n}`)
                .join(", ") || "none",
          },
          { header: "Upstream status", num: true, cell: (e) => e.upstreamStatus || "–" },
          { header: "Latency (ms)", num: true, cell: (e) => e.latencyMs },
        ]}
      />
      <Pager list={list} />
      <section aria-labelledby="verify-h" className="card">
        <h2 id="verify-h">Verify the chain</h2>
        <button type="button" onClick={verify}>
          Verify
        </button>
        <ErrorNote error={error} />
        <Live>
          {check
            ? check.valid
              ? `The chain of ${check.entries} entries verifies.`
              : `The chain is broken at entry ${check.brokenAt}: ${check.reason}.`
            : ""}
        </Live>
      </section>
    </Page>
  );
}
