import { useEffect, useRef, useState, type FormEvent } from "react";
import { ApiError, get, post, type Pipeline, type Run } from "../api";
import { ErrorNote, Live } from "../ui";
import { Trace } from "./Trace";

// pollRun follows a run until it finishes, calling onUpdate with each answer.
export function usePoll() {
  const timer = useRef<number | undefined>(undefined);
  useEffect(() => () => window.clearTimeout(timer.current), []);
  return (url: string, onUpdate: (r: Run) => void, onError: (e: unknown) => void) => {
    window.clearTimeout(timer.current);
    const tick = async () => {
      try {
        const r = await get<Run>(url);
        onUpdate(r);
        if (r.status === "running") timer.current = window.setTimeout(tick, 400);
      } catch (e) {
        onError(e);
      }
    };
    tick();
  };
}

// streamChat runs a one-input, one-output pipeline through the dashboard's
// stream (POST /api/pipelines/{id}/stream: the chat-completions stream,
// signed in by the session), calling onToken with each piece of the model's
// answer as it arrives and onRunId once the run is named. It answers false
// when the pipeline cannot answer chat completions (then the caller
// invokes it instead); an error it throws is the API's.
async function streamChat(pipelineId: string, text: string, onRunId: (id: string) => void, onToken: (t: string) => void): Promise<boolean> {
  const session = await get<{ csrfToken: string }>("/api/session");
  const res = await fetch(`/api/pipelines/${encodeURIComponent(pipelineId)}/stream`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream", "X-CSRF-Token": session.csrfToken },
    body: JSON.stringify({ stream: true, messages: [{ role: "user", content: text }] }),
  });
  if (!res.ok) {
    const body = await res.json().catch(() => ({}));
    // Not chat-shaped: the invoke API runs it.
    if (res.status === 422 || res.status === 409) return false;
    const msg = typeof body?.error === "string" ? body.error : (body?.error?.message ?? `${res.status} ${res.statusText}`);
    throw new ApiError(res.status, msg, body);
  }
  const runId = res.headers.get("x-svc-run-id");
  if (runId) onRunId(runId);
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i: number;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const event = buf.slice(0, i);
      buf = buf.slice(i + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data:")) continue;
        const data = line.slice(5).trim();
        if (data === "[DONE]") return true;
        const chunk = JSON.parse(data);
        if (chunk.error) throw new ApiError(502, chunk.error.message ?? "the run failed", chunk);
        const t = chunk.choices?.[0]?.delta?.content;
        if (t) onToken(t);
      }
    }
  }
  return true;
}

export function TryIt({ pipeline }: { pipeline: Pipeline }) {
  const contract = pipeline.contract;
  const [inputs, setInputs] = useState<Record<string, string>>({});
  const [run, setRun] = useState<Run | null>(null);
  const [streamed, setStreamed] = useState<string | undefined>(undefined);
  const [streamRun, setStreamRun] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const poll = usePoll();
  const live = useRef<number | undefined>(undefined);
  useEffect(() => () => window.clearTimeout(live.current), []);
  if (pipeline.servingVersion === null) return <p>Publish the pipeline first: the try-it panel runs the serving version.</p>;

  const runUrl = (id: string) => `/api/runs/${encodeURIComponent(id)}`;

  // follow polls the run's record (its live node states) until stopped.
  const follow = (id: string, stop: () => boolean) => {
    const tick = async () => {
      try {
        const r = await get<Run>(runUrl(id));
        if (!stop()) setRun((old) => (old && old.status !== "running" ? old : r));
      } catch {
        // The run may not be admitted yet: the next tick asks again.
      }
      if (!stop()) live.current = window.setTimeout(tick, 400);
    };
    tick();
  };

  const invoke = async () => {
    const started = await post<{ runId: string; statusUrl: string }>(`/api/pipelines/${encodeURIComponent(pipeline.id)}/invoke`, { inputs });
    // The account's run record carries the live node states (with their
    // times) while it runs, and the full trace once it ends.
    poll(
      runUrl(started.runId),
      (r) => {
        setRun(r);
        if (r.status !== "running") setBusy(false);
      },
      (err) => (setError(err), setBusy(false)),
    );
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    setRun(null);
    setStreamed(undefined);
    setBusy(true);
    window.clearTimeout(live.current);
    const only = contract?.inputs.length === 1 && contract.outputs.length === 1 ? contract.inputs[0].key : null;
    try {
      if (only !== null) {
        let runId = "";
        let ended = false;
        let text = "";
        const ok = await streamChat(
          pipeline.id,
          inputs[only] ?? "",
          (id) => {
            runId = id;
            setStreamRun(id);
            setStreamed("");
            follow(id, () => ended);
          },
          (t) => {
            text += t;
            setStreamed(text);
          },
        ).finally(() => {
          ended = true;
          window.clearTimeout(live.current);
        });
        if (ok) {
          if (runId)
            poll(
              runUrl(runId),
              (r) => {
                setRun(r);
                if (r.status !== "running") setBusy(false);
              },
              (err) => (setError(err), setBusy(false)),
            );
          else setBusy(false);
          return;
        }
      }
      await invoke();
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };

  return (
    <div className="tryit">
      <p>
        Runs the serving version (v{pipeline.servingVersion}) with your account's credit, exactly as an API call does
        {contract?.inputs.length === 1 && contract.outputs.length === 1 ? "; the model's answer streams in as it is written" : ""}.
      </p>
      <form onSubmit={submit} className="card">
        {contract?.inputs.map((i) => (
          <label key={i.key}>
            {i.key}
            {i.required ? " (required)" : " (optional)"}
            {i.description ? <span className="muted small"> — {i.description}</span> : null}
            <textarea
              name={`input-${i.key}`}
              rows={2}
              required={i.required}
              value={inputs[i.key] ?? ""}
              onChange={(e) => setInputs({ ...inputs, [i.key]: e.target.value })}
            />
          </label>
        ))}
        <button type="submit" className="primary" disabled={busy}>
          Run
        </button>
      </form>
      <Live>{run ? (run.status === "running" ? "Running…" : `Run finished: ${run.status}.`) : busy ? "Starting…" : ""}</Live>
      <ErrorNote error={error} />
      {(run || streamed !== undefined) && (
        <Trace
          run={run ?? { runId: streamRun, status: "running", version: pipeline.servingVersion, startedAt: new Date().toISOString() }}
          pipelineId={pipeline.id}
          streamed={streamed}
        />
      )}
    </div>
  );
}
