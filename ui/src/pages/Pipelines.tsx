import { useState, type FormEvent } from "react";
import { get, post, when, type Pipeline } from "../api";
import { DataTable } from "../list";
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
      <DataTable
        caption="Your pipelines"
        rows={list.data?.pipelines}
        rowKey={(p) => p.id}
        empty="No pipelines yet: create one above."
        columns={[
          { header: "Name", cell: (p) => <Link to={`/pipelines/${encodeURIComponent(p.id)}`}>{p.name}</Link> },
          { header: "Id", className: () => "mono", cell: (p) => p.id },
          { header: "Serving version", cell: (p) => p.servingVersion ?? "not published" },
          { header: "Updated", cell: (p) => when(p.updatedAt) },
        ]}
      />
    </Page>
  );
}
