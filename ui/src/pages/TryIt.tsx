import { useEffect, useRef, useState, type FormEvent } from "react";
import { get, post, type Pipeline, type Run } from "../api";
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

export function TryIt({ pipeline }: { pipeline: Pipeline }) {
  const contract = pipeline.contract;
  const [inputs, setInputs] = useState<Record<string, string>>({});
  const [run, setRun] = useState<Run | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const poll = usePoll();
  if (pipeline.servingVersion === null) return <p>Publish the pipeline first: the try-it panel runs the serving version.</p>;

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    setRun(null);
    setBusy(true);
    try {
      const started = await post<{ runId: string; statusUrl: string }>(`/api/pipelines/${encodeURIComponent(pipeline.id)}/invoke`, { inputs });
      const url = `/api/pipelines/${encodeURIComponent(pipeline.id)}/invoke?runId=${encodeURIComponent(started.runId)}`;
      poll(
        url,
        (r) => {
          setRun(r);
          if (r.status === "running") return;
          setBusy(false);
          // The finished run's full trace (timings, tokens, cost per node)
          // and its workflow link come from the run's own page.
          get<Run>(`/api/runs/${encodeURIComponent(r.runId)}`).then(setRun, setError);
        },
        (err) => (setError(err), setBusy(false)),
      );
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };

  return (
    <div className="tryit">
      <p>
        Runs the serving version (v{pipeline.servingVersion}) with your account's credit, exactly as an API call does.
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
      {run && <Trace run={run} pipelineId={pipeline.id} />}
    </div>
  );
}
