import { useState, type FormEvent } from "react";
import { ApiError, get, patch, post, qs, when } from "../api";
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

type Enclave = { id: string; name: string };

const statuses = ["", "running", "pending", "stopped", "failed"];

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
  const apply = (e: FormEvent) => {
    e.preventDefault();
    setFilter({ enclaveId, status });
  };
  const name = (id: string) => enclaves.data?.enclaves.find((e) => e.id === id)?.name ?? id;
  return (
    <Page title="Scheduled tasks">
      <p>Tasks call an enclave's application on a schedule (create and edit them through the API).</p>
      <form onSubmit={apply} className="filters card">
        <label>
          Enclave
          <select name="enclaveId" value={enclaveId} onChange={(e) => setEnclaveId(e.target.value)}>
            <option value="">all enclaves</option>
            {enclaves.data?.enclaves.map((e) => (
              <option key={e.id} value={e.id}>
                {e.name}
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
      {list.error ? <Unavailable error={list.error} /> : null}
      <table>
        <caption className="sr-only">Your scheduled tasks</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Enclave</th>
            <th scope="col">Schedule</th>
            <th scope="col">Status</th>
            <th scope="col">Last run</th>
            <th scope="col">Next run</th>
          </tr>
        </thead>
        <tbody>
          {list.data?.tasks.map((t) => (
            <tr key={t.id}>
              <td>
                <Link to={`/tasks/${encodeURIComponent(t.id)}`}>{t.name}</Link>
              </td>
              <td>
                <Link to={`/enclaves/${encodeURIComponent(t.enclaveId)}`}>{name(t.enclaveId)}</Link>
              </td>
              <td>
                <span className="mono">{t.schedule}</span> ({t.timezone})
              </td>
              <td>
                <Status status={t.status} />
              </td>
              <td>
                <LastRunCell run={t.lastRun} />
              </td>
              <td>{t.nextRuns.length > 0 ? when(t.nextRuns[0]) : "–"}</td>
            </tr>
          ))}
          {list.data && list.data.tasks.length === 0 && (
            <tr>
              <td colSpan={6}>No tasks match.</td>
            </tr>
          )}
        </tbody>
      </table>
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
      <table>
        <caption className="sr-only">The task's runs, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Scheduled for</th>
            <th scope="col">Outcome</th>
            <th scope="col" className="num">
              Duration
            </th>
            <th scope="col">HTTP</th>
            <th scope="col">Result</th>
          </tr>
        </thead>
        <tbody>
          {runs.data?.runs.map((r) => (
            <tr key={r.id}>
              <td title={r.id}>{when(r.scheduledTime)}</td>
              <td>
                <Status status={r.outcome} />
              </td>
              <td className="num">{duration(r.durationMs)}</td>
              <td>{r.httpStatus || "–"}</td>
              <td className="mono small">
                {r.result || "–"}
                {r.truncated ? " …(truncated)" : ""}
              </td>
            </tr>
          ))}
          {runs.data && runs.data.runs.length === 0 && (
            <tr>
              <td colSpan={5}>No runs yet.</td>
            </tr>
          )}
        </tbody>
      </table>
    </Page>
  );
}
