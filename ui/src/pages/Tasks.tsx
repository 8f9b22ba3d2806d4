import { useMemo, useState, type FormEvent } from "react";
import { ApiError, get, patch, post, qs, when, type Enclave } from "../api";
import { inZone, nextFirings } from "../cron";
import { DataTable, FilterForm, SelectFilter } from "../list";
import { Link, navigate } from "../router";
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
  request: { method: string; path: string; timeoutSeconds: number; body?: string; headers?: Record<string, string> };
  catchupWindowSeconds?: number;
  jitterSeconds?: number;
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

// The task form: create (every field) and edit (the fields that changed
// go in the PATCH). The schedule field has a helper that shows the next
// firings as the schedule is typed (ui/src/cron.ts).
const presets: [string, string][] = [
  ["*/15 * * * *", "every 15 minutes"],
  ["@hourly", "every hour"],
  ["0 9 * * MON-FRI", "weekdays at 09:00"],
  ["0 3 * * *", "daily at 03:00"],
  ["@weekly", "Sundays at 00:00"],
  ["@every 90m", "every 90 minutes"],
];
const zones = ["UTC", "Europe/London", "Europe/Berlin", "America/New_York", "America/Chicago", "America/Los_Angeles", "Asia/Tokyo", "Asia/Kolkata", "Australia/Sydney"];
const methods = ["POST", "GET", "PUT", "PATCH", "DELETE", "HEAD"];
const overlaps = ["skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"];

function CronHelper({ schedule, timezone }: { schedule: string; timezone: string }) {
  const f = useMemo(() => nextFirings(schedule, timezone, 5), [schedule, timezone]);
  return (
    <div className="hint" id="cron-help" aria-live="polite" data-testid="cron-next" data-from={f.from.toISOString()}>
      {f.error ? (
        <span className="error">The schedule {f.error}.</span>
      ) : (
        <>
          Next firings ({timezone || "UTC"}):
          <ol className="small">
            {(f.runs ?? []).map((r) => (
              <li key={r.toISOString()} data-at={r.toISOString()}>
                {inZone(r, timezone)}
              </li>
            ))}
          </ol>
        </>
      )}
    </div>
  );
}

type FormState = {
  name: string;
  description: string;
  enclaveId: string;
  schedule: string;
  timezone: string;
  method: string;
  path: string;
  body: string;
  timeoutSeconds: string;
  overlap: string;
  failureThreshold: string;
  jitterSeconds: string;
  status: string;
};

function initial(t?: Task, enclaveId = ""): FormState {
  return {
    name: t?.name ?? "",
    description: t?.description ?? "",
    enclaveId: t?.enclaveId ?? enclaveId,
    schedule: t?.schedule ?? "*/15 * * * *",
    timezone: t?.timezone ?? "UTC",
    method: t?.request.method ?? "POST",
    path: t?.request.path ?? "/",
    body: t?.request.body ?? "",
    timeoutSeconds: String(t?.request.timeoutSeconds ?? 30),
    overlap: t?.overlap ?? "skip",
    failureThreshold: String(t?.failureThreshold ?? 3),
    jitterSeconds: String(t?.jitterSeconds ?? 0),
    status: t ? (t.status === "stopped" ? "stopped" : "running") : "running",
  };
}

function TaskForm({ task, onSaved, onCancel }: { task?: Task; onSaved: (t: Task) => void; onCancel?: () => void }) {
  const enclaves = useLoad(() => get<{ enclaves: Enclave[] }>("/api/enclaves"), []);
  const [f, setF] = useState<FormState>(() => initial(task, new URLSearchParams(location.search).get("enclaveId") ?? ""));
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const set = (k: keyof FormState) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });
  const usable = enclaves.data?.enclaves.filter((e) => e.status !== "DESTROYED" && e.status !== "FAILED") ?? [];
  const noBody = f.method === "GET" || f.method === "HEAD";

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const request: Record<string, unknown> = { method: f.method, path: f.path, timeoutSeconds: Number(f.timeoutSeconds) };
    if (!noBody && f.body) request.body = f.body;
    const spec: Record<string, unknown> = {
      name: f.name,
      description: f.description,
      schedule: f.schedule.trim(),
      timezone: f.timezone,
      request,
      overlap: f.overlap,
      failureThreshold: Number(f.failureThreshold),
      jitterSeconds: Number(f.jitterSeconds),
    };
    try {
      if (task) {
        // Only what changed, so an edit never rewrites fields it did not touch.
        const was = initial(task);
        const changed: Record<string, unknown> = {};
        for (const k of ["name", "description", "schedule", "timezone", "overlap"] as const) if (f[k] !== was[k]) changed[k] = spec[k];
        if (f.failureThreshold !== was.failureThreshold) changed.failureThreshold = spec.failureThreshold;
        if (f.jitterSeconds !== was.jitterSeconds) changed.jitterSeconds = spec.jitterSeconds;
        if (f.method !== was.method || f.path !== was.path || f.body !== was.body || f.timeoutSeconds !== was.timeoutSeconds) {
          changed.request = { ...request, headers: task.request.headers };
        }
        onSaved(Object.keys(changed).length ? await patch<Task>(`/api/tasks/${encodeURIComponent(task.id)}`, changed) : task);
      } else {
        onSaved(await post<Task>("/api/tasks", { ...spec, enclaveId: f.enclaveId, status: f.status }));
      }
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form onSubmit={submit} className="card" aria-labelledby="task-form-h">
      <h2 id="task-form-h">{task ? "Edit the task" : "Create a task"}</h2>
      <div className="form-grid">
        <label>
          Name
          <input name="taskName" required maxLength={100} value={f.name} onChange={set("name")} />
        </label>
        <label>
          Description
          <input name="taskDescription" maxLength={1000} value={f.description} onChange={set("description")} />
        </label>
        {!task && (
          <label>
            Enclave
            <select name="enclaveId" required value={f.enclaveId} onChange={set("enclaveId")}>
              <option value="">choose an enclave</option>
              {usable.map((e) => (
                <option key={e.id} value={e.id}>
                  {e.name} ({e.status})
                </option>
              ))}
            </select>
          </label>
        )}
        <label>
          Schedule <span className="hint">cron (5 fields), @hourly…, or @every 90s</span>
          <input name="schedule" required className="mono" value={f.schedule} onChange={set("schedule")} aria-describedby="cron-help" list="schedule-presets" />
          <datalist id="schedule-presets">
            {presets.map(([v, l]) => (
              <option key={v} value={v}>
                {l}
              </option>
            ))}
          </datalist>
        </label>
        <label>
          Time zone
          <input name="timezone" required value={f.timezone} onChange={set("timezone")} list="timezones" />
          <datalist id="timezones">
            {zones.map((z) => (
              <option key={z} value={z} />
            ))}
          </datalist>
        </label>
        <div className="wide">
          <CronHelper schedule={f.schedule} timezone={f.timezone} />
        </div>
        <label>
          Method
          <select name="method" value={f.method} onChange={set("method")}>
            {methods.map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
        </label>
        <label>
          Path <span className="hint">on the enclave's own address</span>
          <input name="path" required pattern="/.*" className="mono" value={f.path} onChange={set("path")} />
        </label>
        <label>
          Timeout (s) <span className="hint">1–300</span>
          <input name="timeoutSeconds" type="number" min={1} max={300} value={f.timeoutSeconds} onChange={set("timeoutSeconds")} />
        </label>
        {!noBody && (
          <label className="wide">
            Body <span className="hint">optional, sent as JSON unless a header says otherwise</span>
            <textarea name="body" rows={3} className="mono" value={f.body} onChange={set("body")} />
          </label>
        )}
        <label>
          While a run is under way
          <select name="overlap" value={f.overlap} onChange={set("overlap")}>
            {overlaps.map((o) => (
              <option key={o}>{o}</option>
            ))}
          </select>
        </label>
        <label>
          Failures before it stops <span className="hint">1–100</span>
          <input name="failureThreshold" type="number" min={1} max={100} value={f.failureThreshold} onChange={set("failureThreshold")} />
        </label>
        <label>
          Jitter (s) <span className="hint">0–3600</span>
          <input name="jitterSeconds" type="number" min={0} max={3600} value={f.jitterSeconds} onChange={set("jitterSeconds")} />
        </label>
        {!task && (
          <label>
            Start
            <select name="status" value={f.status} onChange={set("status")}>
              <option value="running">running</option>
              <option value="stopped">stopped</option>
            </select>
          </label>
        )}
      </div>
      <ErrorNote error={error || enclaves.error} />
      <button type="submit" className="primary" disabled={busy}>
        {task ? "Save task" : "Create task"}
      </button>{" "}
      {onCancel && (
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      )}
    </form>
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
  const [creating, setCreating] = useState(params.has("new"));
  return (
    <Page
      title="Scheduled tasks"
      actions={
        <button type="button" aria-expanded={creating} onClick={() => setCreating(!creating)}>
          {creating ? "Close the form" : "New task"}
        </button>
      }
    >
      <p>Tasks call an enclave's application on a schedule.</p>
      {creating && <TaskForm onSaved={(t) => navigate(`/dashboard/tasks/${encodeURIComponent(t.id)}`)} onCancel={() => setCreating(false)} />}
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
  const [editing, setEditing] = useState(false);
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
            <button type="button" aria-expanded={editing} onClick={() => setEditing(!editing)}>
              {editing ? "Close the editor" : "Edit"}
            </button>
          </div>
          {editing && (
            <TaskForm
              key={d.updatedAt}
              task={d}
              onSaved={() => {
                setEditing(false);
                setDone("The task is saved.");
                task.reload();
              }}
              onCancel={() => setEditing(false)}
            />
          )}
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
