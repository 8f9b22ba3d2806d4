import { useState } from "react";
import { ApiError, get, patch, post, qs, when, type Enclave } from "../api";
import { DataTable, FilterForm, SelectFilter } from "../list";
import { Link } from "../router";
import { ErrorNote, Live, Page, Status, useLoad } from "../ui";

// Scheduled tasks (docs/tasks.md): each task calls its enclave's app on a
// schedule; every firing is a run with an outcome.
type TaskRun = {
  id: string;
  taskId: string;
  scheduledTime: string;
  startedAt: string;
  durationMs: number;
  outcome: string;
  httpStatus?: number;
  result: string;
  truncated: boolean;
};

type LastRun = { runId: string; time: string; outcome: string; durationMs: number; httpStatus?: number; result: string };

type Task = {
  id: string;
  name: string;
  description?: string;
  enclaveId: string;
  schedule: string;
  timezone: string;
  request: { method: string; path: string; timeoutSeconds: number };
  overlap: string;
  failureThreshold: number;
  consecutiveFailures: number;
  status: string;
  statusReason?: string | null;
  lastRun?: LastRun | null;
  nextRuns: string[];
  scheduleId: string;
  createdAt: string;
  updatedAt: string;
};

const statuses = ["running", "pending", "stopped", "failed"].map((s) => ({ value: s, label: s }));

function Unavailable({ error }: { error: unknown }) {
  if (error instanceof ApiError && error.status === 503) return <p>Scheduled tasks are not enabled on this deployment.</p>;
  return <ErrorNote error={error} />;
}

function useEnclaveNames() {
  const enc = useLoad(() => get<{ enclaves: Enclave[] }>("/api/enclaves"), []);
  return (id: string) => enc.data?.enclaves.find((e) => e.id === id)?.name ?? id;
}

function duration(ms: number | undefined) {
  return ms === undefined || ms === null ? "–" : `${ms} ms`;
}

function LastRunCell({ run }: { run?: LastRun | null }) {
  if (!run) return <>never</>;
  return (
    <>
      <Status status={run.outcome} /> {when(run.time)}
    </>
  );
}

export function TaskList() {
  const params = new URLSearchParams(location.search);
  const enclaves = useLoad(() => get<{ enclaves: Enclave[] }>("/api/enclaves"), []);
  const [enclaveId, setEnclaveId] = useState(params.get("enclaveId") ?? "");
  const [status, setStatus] = useState("");
  const [filter, setFilter] = useState({ enclaveId, status });
  const list = useLoad(() => get<{ tasks: Task[] }>("/api/tasks" + qs(filter)), [filter]);
  const name = (id: string) => enclaves.data?.enclaves.find((e) => e.id === id)?.name ?? id;
  return (
    <Page title="Scheduled tasks">
      <p>Tasks call an enclave's application on a schedule (create and edit them through the API).</p>
      <FilterForm onApply={() => setFilter({ enclaveId, status })} onRefresh={list.reload}>
        <SelectFilter
          label="Enclave"
          name="enclaveId"
          value={enclaveId}
          onChange={setEnclaveId}
          anyLabel="all enclaves"
          options={enclaves.data?.enclaves.map((e) => ({ value: e.id, label: e.name })) ?? []}
        />
        <SelectFilter label="Status" name="status" value={status} onChange={setStatus} anyLabel="any status" options={statuses} />
      </FilterForm>
      {list.error ? <Unavailable error={list.error} /> : null}
      <DataTable
        caption="Your scheduled tasks"
        rows={list.data?.tasks}
        rowKey={(t) => t.id}
        empty="No tasks match."
        columns={[
          { header: "Name", cell: (t) => <Link to={`/tasks/${encodeURIComponent(t.id)}`}>{t.name}</Link> },
          { header: "Enclave", cell: (t) => <Link to={`/enclaves/${encodeURIComponent(t.enclaveId)}`}>{name(t.enclaveId)}</Link> },
          {
            header: "Schedule",
            cell: (t) => (
              <>
                <span className="mono">{t.schedule}</span> ({t.timezone})
              </>
            ),
          },
          { header: "Status", cell: (t) => <Status status={t.status} /> },
          { header: "Last run", cell: (t) => <LastRunCell run={t.lastRun} /> },
          { header: "Next run", cell: (t) => (t.nextRuns.length > 0 ? when(t.nextRuns[0]) : "–") },
        ]}
      />
    </Page>
  );
}

export function TaskPage({ id }: { id: string }) {
  const path = `/api/tasks/${encodeURIComponent(id)}`;
  const task = useLoad(() => get<Task>(path), [id]);
  const runs = useLoad(() => get<{ runs: TaskRun[] }>(`${path}/runs${qs({ limit: 25 })}`), [id]);
  const enclaveName = useEnclaveNames();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState("");
  const d = task.data;

  // The buttons stay enabled (aria-disabled while busy) and Stop/Start is
  // one element whose label changes, so keyboard focus stays where it was.
  const act = async (what: () => Promise<unknown>, message: string) => {
    if (busy) return;
    setBusy(true);
    setError(null);
    setDone("");
    try {
      await what();
      setDone(message);
      task.reload();
      runs.reload();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const setStatus = (status: "running" | "stopped") =>
    act(() => patch(path, { status }), status === "stopped" ? "The task is stopped." : "The task is started.");
  const runNow = () => act(() => post(`${path}/run`), "The task was fired; its run appears below when it finishes (Refresh).");

  return (
    <Page title={d ? `Task: ${d.name}` : "Task"}>
      {task.error ? <Unavailable error={task.error} /> : null}
      {d && (
        <>
          <div className="actions" role="group" aria-label="Task actions">
            {d.status === "running" || d.status === "pending" ? (
              <button type="button" className="danger" aria-disabled={busy} onClick={() => setStatus("stopped")}>
                Stop
              </button>
            ) : (
              <button type="button" className="primary" aria-disabled={busy} onClick={() => setStatus("running")}>
                Start
              </button>
            )}
            <button type="button" aria-disabled={busy} onClick={runNow}>
              Run now
            </button>
            <button
              type="button"
              aria-disabled={busy}
              onClick={() => {
                task.reload();
                runs.reload();
              }}
            >
              Refresh
            </button>
          </div>
          <ErrorNote error={error} />
          <Live>{done}</Live>
          <dl className="facts">
            <dt>Id</dt>
            <dd className="mono">{d.id}</dd>
            <dt>Status</dt>
            <dd>
              <Status status={d.status} />
              {d.statusReason ? ` ${d.statusReason}` : ""}
            </dd>
            <dt>Description</dt>
            <dd>{d.description || "–"}</dd>
            <dt>Enclave</dt>
            <dd>
              <Link to={`/enclaves/${encodeURIComponent(d.enclaveId)}`}>{enclaveName(d.enclaveId)}</Link>
            </dd>
            <dt>Schedule</dt>
            <dd>
              <span className="mono">{d.schedule}</span> ({d.timezone})
            </dd>
            <dt>Request</dt>
            <dd className="mono">
              {d.request.method} {d.request.path} (timeout {d.request.timeoutSeconds} s)
            </dd>
            <dt>Overlap</dt>
            <dd>{d.overlap}</dd>
            <dt>Failures in a row</dt>
            <dd>
              {d.consecutiveFailures} of {d.failureThreshold} (then the task stops as failed)
            </dd>
            <dt>Last run</dt>
            <dd>
              <LastRunCell run={d.lastRun} />
            </dd>
            <dt>Next runs</dt>
            <dd>
              {d.nextRuns.length > 0 ? (
                <ul className="plain">
                  {d.nextRuns.map((n) => (
                    <li key={n}>{when(n)}</li>
                  ))}
                </ul>
              ) : (
                "– (none while the task is not running)"
              )}
            </dd>
            <dt>Temporal schedule</dt>
            <dd className="mono">{d.scheduleId}</dd>
            <dt>Created</dt>
            <dd>{when(d.createdAt)}</dd>
          </dl>
        </>
      )}
      <h2>Recent runs</h2>
      <ErrorNote error={runs.error} />
      <DataTable
        caption="The task's runs, newest first"
        rows={runs.data?.runs}
        rowKey={(r) => r.id}
        empty="No runs yet."
        columns={[
          { header: "Scheduled for", cell: (r) => <span title={r.id}>{when(r.scheduledTime)}</span> },
          { header: "Outcome", cell: (r) => <Status status={r.outcome} /> },
          { header: "Duration", num: true, cell: (r) => duration(r.durationMs) },
          { header: "HTTP", cell: (r) => r.httpStatus || "–" },
          { header: "Result", className: () => "mono small", cell: (r) => `${r.result || "–"}${r.truncated ? " …(truncated)" : ""}` },
        ]}
      />
    </Page>
  );
}
