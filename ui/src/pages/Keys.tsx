import { useState, type FormEvent } from "react";
import { del, get, patch, post, when } from "../api";
import { CopyButton, ErrorNote, Page, useLoad } from "../ui";

// The scopes come from the server's one list (GET /api/keys/scopes,
// internal/apikey's catalog), grouped and described there, so the form
// offers exactly the scopes a key can hold.
type ScopeGroup = { name: string; scopes: { name: string; text: string }[] };

// ScopePicker is every scope, a box each, in the server's groups, with a
// box per group and Select all / Clear.
function ScopePicker({
  groups,
  error,
  value,
  onChange,
  name,
  label,
}: {
  groups?: ScopeGroup[];
  error?: unknown;
  value: string[];
  onChange: (v: string[]) => void;
  name: string;
  label: string;
}) {
  const id = `${name}-h`;
  return (
    <>
      <div className="toolbar-row">
        <strong id={id}>{label}</strong>
        <button type="button" onClick={() => onChange(groups?.flatMap((g) => g.scopes.map((s) => s.name)) ?? value)}>
          Select all
        </button>
        <button type="button" onClick={() => onChange([])}>
          Clear
        </button>
        <span className="hint">{value.length} selected</span>
      </div>
      <ErrorNote error={error} />
      <div className="scope-groups" role="group" aria-labelledby={id}>
        {groups?.map((g) => {
          const names = g.scopes.map((s) => s.name);
          const all = names.every((n) => value.includes(n));
          return (
            <fieldset key={g.name}>
              <legend>{g.name}</legend>
              <label className="inline">
                <input
                  type="checkbox"
                  checked={all}
                  onChange={(e) => onChange(e.target.checked ? [...new Set([...value, ...names])] : value.filter((p) => !names.includes(p)))}
                />
                <span>all of {g.name.toLowerCase()}</span>
              </label>
              {g.scopes.map((sc) => (
                <label key={sc.name} className="inline">
                  <input
                    type="checkbox"
                    name={name}
                    value={sc.name}
                    checked={value.includes(sc.name)}
                    onChange={(e) => onChange(e.target.checked ? [...value, sc.name] : value.filter((p) => p !== sc.name))}
                  />
                  <span>
                    <span className="mono">{sc.name}</span> <span className="muted">{sc.text}</span>
                  </span>
                </label>
              ))}
            </fieldset>
          );
        })}
      </div>
    </>
  );
}

type Key = { id: string; name: string; permissions: string[]; status: string; prefix: string; createdAt: string; lastUsedAt?: string };

export function Keys() {
  const list = useLoad(() => get<{ keys: Key[] }>("/api/keys"), []);
  const catalog = useLoad(() => get<{ groups: ScopeGroup[] }>("/api/keys/scopes"), []);
  const [name, setName] = useState("");
  const [perms, setPerms] = useState<string[]>(["pipelines:read", "pipelines:run"]);
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [editing, setEditing] = useState<{ id: string; perms: string[] } | null>(null);

  const create = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      const k = await post<Key & { key: string }>("/api/keys", { name, permissions: perms });
      setCreated({ name: k.name, key: k.key });
      setName("");
      list.reload();
    } catch (err) {
      setError(err);
    }
  };
  const act = async (f: () => Promise<unknown>) => {
    setError(null);
    try {
      await f();
      list.reload();
      return true;
    } catch (err) {
      setError(err);
      return false;
    }
  };

  return (
    <Page title="API keys">
      <section aria-labelledby="new-key-h" className="card">
        <h2 id="new-key-h">Create a key</h2>
        <form onSubmit={create}>
          <label>
            Name
            <input name="keyName" required value={name} onChange={(e) => setName(e.target.value)} />
          </label>
          <ScopePicker groups={catalog.data?.groups} error={catalog.error} value={perms} onChange={setPerms} name="scope" label="Scopes" />
          <button type="submit" className="primary">
            Create key
          </button>
        </form>
        {created && (
          <div className="secret" role="status">
            <p>
              The secret of <strong>{created.name}</strong>. It is shown <strong>once</strong>: copy it now.
            </p>
            <label>
              Secret
              <input readOnly className="mono" value={created.key} data-testid="new-key-secret" onFocus={(e) => e.target.select()} />
            </label>
            <CopyButton text={created.key} label="Copy secret" />
            <button type="button" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        )}
      </section>
      <ErrorNote error={error || list.error} />
      <table>
        <caption className="sr-only">Your API keys</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Prefix</th>
            <th scope="col">Scopes</th>
            <th scope="col">Status</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {list.data?.keys.map((k) => [
            <tr key={k.id}>
              <td>{k.name}</td>
              <td className="mono">{k.prefix}</td>
              <td className="mono">{k.permissions.join(", ")}</td>
              <td>{k.status}</td>
              <td>{when(k.createdAt)}</td>
              <td>{when(k.lastUsedAt)}</td>
              <td className="actions">
                {k.status === "active" ? (
                  <button type="button" onClick={() => act(() => patch(`/api/keys/${k.id}`, { status: "inactive" }))} aria-label={`Deactivate ${k.name}`}>
                    Deactivate
                  </button>
                ) : (
                  <button type="button" onClick={() => act(() => patch(`/api/keys/${k.id}`, { status: "active" }))} aria-label={`Reactivate ${k.name}`}>
                    Reactivate
                  </button>
                )}
                <button
                  type="button"
                  aria-expanded={editing?.id === k.id}
                  aria-label={`Change the scopes of ${k.name}`}
                  onClick={() => setEditing(editing?.id === k.id ? null : { id: k.id, perms: k.permissions })}
                >
                  Scopes…
                </button>
                <button
                  type="button"
                  className="danger"
                  aria-label={`Delete ${k.name}`}
                  onClick={() => confirm(`Delete the key “${k.name}” for good?`) && act(() => del(`/api/keys/${k.id}`))}
                >
                  Delete
                </button>
              </td>
            </tr>,
            editing?.id === k.id && (
              <tr key={k.id + "-edit"}>
                <td colSpan={7}>
                  <form
                    className="card"
                    onSubmit={(e) => {
                      e.preventDefault();
                      act(() => patch(`/api/keys/${k.id}`, { permissions: editing.perms })).then((ok) => ok && setEditing(null));
                    }}
                  >
                    <ScopePicker
                      groups={catalog.data?.groups}
                      value={editing.perms}
                      onChange={(v) => setEditing({ id: k.id, perms: v })}
                      name={`edit-scope-${k.id}`}
                      label={`Scopes of ${k.name}`}
                    />
                    <p className="hint">A key can grant at most the scopes of the session or key changing it.</p>
                    <button type="submit" className="primary">
                      Save scopes
                    </button>{" "}
                    <button type="button" onClick={() => setEditing(null)}>
                      Cancel
                    </button>
                  </form>
                </td>
              </tr>
            ),
          ])}
          {list.data && list.data.keys.length === 0 && (
            <tr>
              <td colSpan={7}>No keys yet.</td>
            </tr>
          )}
        </tbody>
      </table>
    </Page>
  );
}
