import { useState, type FormEvent } from "react";
import { del, get, patch, post, when } from "../api";
import { CopyButton, ErrorNote, Page, useLoad } from "../ui";

export const scopes = [
  ["pipelines:read", "read pipelines and runs"],
  ["pipelines:run", "invoke pipelines"],
  ["pipelines:write", "author and publish pipelines"],
  ["keys:manage", "manage API keys"],
  ["media:read", "read the media library"],
  ["media:write", "change the media library"],
  ["enclaves:read", "read enclaves"],
  ["enclaves:write", "create and change enclaves"],
  ["logs:read", "read enclave logs"],
];

type Key = { id: string; name: string; permissions: string[]; status: string; prefix: string; createdAt: string; lastUsedAt?: string };

export function Keys() {
  const list = useLoad(() => get<{ keys: Key[] }>("/api/keys"), []);
  const [name, setName] = useState("");
  const [perms, setPerms] = useState<string[]>(["pipelines:read", "pipelines:run"]);
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const [error, setError] = useState<unknown>(null);

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
    } catch (err) {
      setError(err);
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
          <fieldset>
            <legend>Scopes</legend>
            {scopes.map(([s, what]) => (
              <label key={s} className="inline">
                <input
                  type="checkbox"
                  name="scope"
                  value={s}
                  checked={perms.includes(s)}
                  onChange={(e) => setPerms(e.target.checked ? [...perms, s] : perms.filter((p) => p !== s))}
                />
                <span className="mono">{s}</span> <span className="muted">({what})</span>
              </label>
            ))}
          </fieldset>
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
          {list.data?.keys.map((k) => (
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
                  className="danger"
                  aria-label={`Delete ${k.name}`}
                  onClick={() => confirm(`Delete the key “${k.name}” for good?`) && act(() => del(`/api/keys/${k.id}`))}
                >
                  Delete
                </button>
              </td>
            </tr>
          ))}
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
