import { useEffect, useState } from "react";
import { get, usd, when, type Pipeline, type Run } from "../api";
import { DataTable, FilterForm, Pager, SelectFilter, usePagedList } from "../list";
import { Link } from "../router";
import { ErrorNote, Live, Page, useLoad } from "../ui";
import { RunStatus, Trace } from "./Trace";
import { usePoll } from "./TryIt";

const statuses = ["running", "success", "error", "partial"].map((s) => ({ value: s, label: s }));

export function RunList() {
  const params = new URLSearchParams(location.search);
  const pipes = useLoad(() => get<{ pipelines: Pipeline[] }>("/api/pipelines"), []);
  const [pipelineId, setPipelineId] = useState(params.get("pipelineId") ?? "");
  const [status, setStatus] = useState("");
  const [filter, setFilter] = useState({ pipelineId, status });
  const list = usePagedList<{ runs: Run[] }>("/api/runs", filter);
  const name = (id?: string) => pipes.data?.pipelines.find((p) => p.id === id)?.name ?? id;
  return (
    <Page title="Runs">
      <FilterForm
        onApply={() => {
          setFilter({ pipelineId, status });
          list.restart();
        }}
        onRefresh={list.reload}
      >
        <SelectFilter
          label="Pipeline"
          name="pipelineId"
          value={pipelineId}
          onChange={setPipelineId}
          anyLabel="all pipelines"
          options={pipes.data?.pipelines.map((p) => ({ value: p.id, label: p.name })) ?? []}
        />
        <SelectFilter label="Status" name="status" value={status} onChange={setStatus} anyLabel="any status" options={statuses} />
      </FilterForm>
      <ErrorNote error={list.error} />
      <DataTable
        caption="Runs, newest first"
        rows={list.data?.runs}
        rowKey={(r) => r.runId}
        empty="No runs match."
        columns={[
          { header: "Run", className: () => "mono", cell: (r) => <Link to={`/runs/${encodeURIComponent(r.runId)}`}>{r.runId}</Link> },
          { header: "Pipeline", cell: (r) => name(r.pipelineId) },
          { header: "Version", cell: (r) => `v${r.version}` },
          { header: "Status", cell: (r) => <RunStatus status={r.status} /> },
          { header: "Started", cell: (r) => when(r.startedAt) },
          { header: "Duration", num: true, cell: (r) => (r.durationMs !== undefined ? `${r.durationMs} ms` : "–") },
          { header: "Cost (USD)", num: true, cell: (r) => (r.usage ? usd(r.usage.costUsd) : "–") },
        ]}
      />
      <Pager list={list} />
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
