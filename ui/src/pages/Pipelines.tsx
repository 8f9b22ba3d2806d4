import { useState, type FormEvent } from "react";
import { get, post, when, type Pipeline } from "../api";
import { Link, navigate } from "../router";
import { ErrorNote, Page, useLoad } from "../ui";

export function PipelineList() {
  const list = useLoad(() => get<{ pipelines: Pipeline[] }>("/api/pipelines"), []);
  const [name, setName] = useState("");
  const [error, setError] = useState<unknown>(null);
  const create = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      const p = await post<Pipeline>("/api/pipelines", { name, draft: { nodes: [], edges: [] } });
      navigate(`/dashboard/pipelines/${encodeURIComponent(p.id)}`);
    } catch (err) {
      setError(err);
    }
  };
  return (
    <Page title="Pipelines">
      <form onSubmit={create} className="card row">
        <label>
          New pipeline name
          <input name="pipelineName" required value={name} onChange={(e) => setName(e.target.value)} />
        </label>
        <button type="submit" className="primary">
          Create pipeline
        </button>
      </form>
      <ErrorNote error={error || list.error} />
      <table>
        <caption className="sr-only">Your pipelines</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Id</th>
            <th scope="col">Serving version</th>
            <th scope="col">Updated</th>
          </tr>
        </thead>
        <tbody>
          {list.data?.pipelines.map((p) => (
            <tr key={p.id}>
              <td>
                <Link to={`/pipelines/${encodeURIComponent(p.id)}`}>{p.name}</Link>
              </td>
              <td className="mono">{p.id}</td>
              <td>{p.servingVersion ?? "not published"}</td>
              <td>{when(p.updatedAt)}</td>
            </tr>
          ))}
          {list.data && list.data.pipelines.length === 0 && (
            <tr>
              <td colSpan={4}>No pipelines yet: create one above.</td>
            </tr>
          )}
        </tbody>
      </table>
    </Page>
  );
}
