import { useEffect, useState } from "react";
import { get, post, when, type Graph, type Pipeline, type VersionInfo } from "../api";
import { diff, type Diff } from "../editor/graph";
import { ErrorNote, Live } from "../ui";

const show = (v: unknown) => (v === undefined ? "(unset)" : typeof v === "string" ? v : JSON.stringify(v));

export function Versions({ pipeline, onChanged }: { pipeline: Pipeline; onChanged: () => void }) {
  const versions = pipeline.versions ?? [];
  const newest = versions[0]?.version;
  const [base, setBase] = useState<string>(versions[1] ? String(versions[1].version) : newest ? String(newest) : "");
  const [target, setTarget] = useState<string>(newest ? String(newest) : "draft");
  const [result, setResult] = useState<Diff | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState("");

  const graphOf = async (v: string): Promise<Graph> => {
    if (v === "draft") return (pipeline.draft as Graph) ?? { nodes: [], edges: [] };
    const r = await get<VersionInfo>(`/api/pipelines/${encodeURIComponent(pipeline.id)}/versions/${v}`);
    return r.graph as Graph;
  };

  useEffect(() => {
    if (!base || !target) return;
    let live = true;
    Promise.all([graphOf(base), graphOf(target)]).then(
      ([a, b]) => live && (setResult(diff(a, b)), setError(null)),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [base, target, pipeline]);

  const rollback = async (v: number) => {
    setError(null);
    try {
      await post(`/api/pipelines/${encodeURIComponent(pipeline.id)}/rollback`, { version: v });
      setNotice(`Version ${v} serves now.`);
      onChanged();
    } catch (e) {
      setError(e);
    }
  };

  if (versions.length === 0) return <p>No versions yet: publish the draft to make version 1.</p>;
  const options = [...versions.map((v) => String(v.version)), "draft"];
  const label = (v: string) => (v === "draft" ? "Draft" : `Version ${v}`);

  return (
    <div className="versions">
      <Live>{notice}</Live>
      <ErrorNote error={error} />
      <section aria-labelledby="vlist-h">
        <h2 id="vlist-h">Versions</h2>
        <table>
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">Published</th>
              <th scope="col">Note</th>
              <th scope="col">Serving</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {versions.map((v) => (
              <tr key={v.version} data-version={v.version}>
                <td>v{v.version}</td>
                <td>{when(v.createdAt)}</td>
                <td data-testid={`note-v${v.version}`}>{v.note ?? ""}</td>
                <td>{v.serving ? <strong>serving</strong> : ""}</td>
                <td>
                  {!v.serving && (
                    <button type="button" onClick={() => rollback(v.version)}>
                      Roll back to v{v.version}
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <section aria-labelledby="diff-h">
        <h2 id="diff-h">Compare</h2>
        <div className="row">
          <label>
            From
            <select value={base} onChange={(e) => setBase(e.target.value)} name="diffFrom">
              {options.map((o) => (
                <option key={o} value={o}>
                  {label(o)}
                </option>
              ))}
            </select>
          </label>
          <label>
            To
            <select value={target} onChange={(e) => setTarget(e.target.value)} name="diffTo">
              {options.map((o) => (
                <option key={o} value={o}>
                  {label(o)}
                </option>
              ))}
            </select>
          </label>
        </div>
        {result && <DiffView d={result} from={label(base)} to={label(target)} />}
      </section>
    </div>
  );
}

function DiffView({ d, from, to }: { d: Diff; from: string; to: string }) {
  const none = !d.nodesAdded.length && !d.nodesRemoved.length && !d.nodesChanged.length && !d.edgesAdded.length && !d.edgesRemoved.length;
  return (
    <div className="diff" data-testid="diff" aria-label={`Changes from ${from} to ${to}`} role="group">
      {none && <p>No changes between {from} and {to}.</p>}
      {d.nodesAdded.map((n) => (
        <p key={"a" + n.id} className="added">
          <span className="tag">added</span> node <span className="mono">{n.id}</span> ({n.type})
        </p>
      ))}
      {d.nodesRemoved.map((n) => (
        <p key={"r" + n.id} className="removed">
          <span className="tag">removed</span> node <span className="mono">{n.id}</span> ({n.type})
        </p>
      ))}
      {d.nodesChanged.map((n) => (
        <div key={"c" + n.id} className="changed">
          <p>
            <span className="tag">changed</span> node <span className="mono">{n.id}</span> ({n.type})
          </p>
          <table>
            <thead>
              <tr>
                <th scope="col">Field</th>
                <th scope="col">{from}</th>
                <th scope="col">{to}</th>
              </tr>
            </thead>
            <tbody>
              {n.changes.map((c) => (
                <tr key={c.field}>
                  <td className="mono">{c.field}</td>
                  <td className="before mono">{show(c.before)}</td>
                  <td className="after mono">{show(c.after)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
      {d.edgesAdded.map((e) => (
        <p key={"ea" + e} className="added">
          <span className="tag">added</span> edge <span className="mono">{e}</span>
        </p>
      ))}
      {d.edgesRemoved.map((e) => (
        <p key={"er" + e} className="removed">
          <span className="tag">removed</span> edge <span className="mono">{e}</span>
        </p>
      ))}
    </div>
  );
}
