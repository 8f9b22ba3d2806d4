import { useEffect, useState, type FormEvent } from "react";
import { get, qs, usd, when, type Pipeline, type Run } from "../api";
import { Link } from "../router";
import { ErrorNote, Live, Page, Status, useLoad } from "../ui";
import { Trace } from "./Trace";
import { usePoll } from "./TryIt";

const statuses = ["", "running", "success", "error", "partial"];

export function RunList() {
  const params = new URLSearchParams(location.search);
  const pipes = useLoad(() => get<{ pipelines: Pipeline[] }>("/api/pipelines"), []);
  const [pipelineId, setPipelineId] = useState(params.get("pipelineId") ?? "");
  const [status, setStatus] = useState("");
  const [filter, setFilter] = useState({ pipelineId, status });
  const [pages, setPages] = useState<string[]>([""]);
  const cursor = pages[pages.length - 1];
  const list = useLoad(
    () => get<{ runs: Run[]; nextCursor?: string }>("/api/runs" + qs({ pipelineId: filter.pipelineId, status: filter.status, limit: 25, cursor })),
    [filter, cursor],
  );
  const apply = (e: FormEvent) => {
    e.preventDefault();
    setFilter({ pipelineId, status });
    setPages([""]);
  };
  const name = (id?: string) => pipes.data?.pipelines.find((p) => p.id === id)?.name ?? id;
  return (
    <Page title="Runs">
      <form onSubmit={apply} className="filters card">
        <label>
          Pipeline
          <select name="pipelineId" value={pipelineId} onChange={(e) => setPipelineId(e.target.value)}>
            <option value="">all pipelines</option>
            {pipes.data?.pipelines.map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          Status
          <select name="status" value={status} onChange={(e) => setStatus(e.target.value)}>
            {statuses.map((s) => (
              <option key={s} value={s}>
                {s || "any status"}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Apply filters</button>
        <button type="button" onClick={list.reload}>
          Refresh
        </button>
      </form>
      <ErrorNote error={list.error} />
      <table>
        <caption className="sr-only">Runs, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Run</th>
            <th scope="col">Pipeline</th>
            <th scope="col">Version</th>
            <th scope="col">Status</th>
            <th scope="col">Started</th>
            <th scope="col" className="num">
              Duration
            </th>
            <th scope="col" className="num">
              Cost (USD)
            </th>
          </tr>
        </thead>
        <tbody>
          {list.data?.runs.map((r) => (
            <tr key={r.runId}>
              <td className="mono">
                <Link to={`/runs/${encodeURIComponent(r.runId)}`}>{r.runId}</Link>
              </td>
              <td>{name(r.pipelineId)}</td>
              <td>v{r.version}</td>
              <td>
                <Status status={r.status} />
              </td>
              <td>{when(r.startedAt)}</td>
              <td className="num">{r.durationMs !== undefined ? `${r.durationMs} ms` : "–"}</td>
              <td className="num">{r.usage ? usd(r.usage.costUsd) : "–"}</td>
            </tr>
          ))}
          {list.data && list.data.runs.length === 0 && (
            <tr>
              <td colSpan={7}>No runs match.</td>
            </tr>
          )}
        </tbody>
      </table>
      <div className="pager">
        <button type="button" disabled={pages.length < 2} onClick={() => setPages(pages.slice(0, -1))}>
          Newer
        </button>
        <button type="button" disabled={!list.data?.nextCursor} onClick={() => setPages([...pages, list.data!.nextCursor!])}>
          Older
        </button>
      </div>
    </Page>
  );
}

export function RunPage({ runId }: { runId: string }) {
  const [run, setRun] = useState<Run | null>(null);
  const [error, setError] = useState<unknown>(null);
  const poll = usePoll();
  useEffect(() => {
    poll(`/api/runs/${encodeURIComponent(runId)}`, setRun, setError);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [runId]);
  return (
    <Page title="Run">
      <ErrorNote error={error} />
      {run && (
        <>
          <p>
            {run.pipelineId && (
              <>
                Pipeline <Link to={`/pipelines/${encodeURIComponent(run.pipelineId)}`}>{run.pipelineId}</Link> ·{" "}
              </>
            )}
            started {when(run.startedAt)}
            {run.kind ? ` · ${run.kind}` : ""}
            {run.workflowUrl && (
              <>
                {" "}
                ·{" "}
                <a href={run.workflowUrl} target="_blank" rel="noreferrer">
                  Open the workflow in the Temporal UI
                </a>
              </>
            )}
          </p>
          <Live>{run.status === "running" ? "The run is in progress; this page updates live." : ""}</Live>
          <Trace run={run} />
        </>
      )}
    </Page>
  );
}
