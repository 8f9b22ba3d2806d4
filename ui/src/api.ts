// The dashboard talks only to the public API, authenticated by the session
// cookie; every state-changing request carries the session's CSRF token.

export type Session = { email: string; accountId: string; csrfToken: string; expiresAt: string };

export class ApiError extends Error {
  status: number;
  body: any;
  constructor(status: number, message: string, body: any) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

let csrf = "";
export function setCsrf(token: string) {
  csrf = token;
}

// onSignedOut is called when an API call answers 401 (the session ended).
let onSignedOut: () => void = () => {};
export function setSignedOutHandler(f: () => void) {
  onSignedOut = f;
}

export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && method !== "HEAD" && csrf) headers["X-CSRF-Token"] = csrf;
  const res = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let data: any = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { error: text };
    }
  }
  if (!res.ok) {
    if (res.status === 401 && path !== "/api/session") onSignedOut();
    const msg =
      typeof data?.error === "string"
        ? data.error
        : typeof data?.error?.message === "string"
          ? data.error.message
          : `${res.status} ${res.statusText}`;
    throw new ApiError(res.status, msg, data);
  }
  return data as T;
}

export const get = <T = any>(path: string) => api<T>("GET", path);
export const post = <T = any>(path: string, body?: unknown) => api<T>("POST", path, body ?? {});
export const put = <T = any>(path: string, body: unknown) => api<T>("PUT", path, body);
export const patch = <T = any>(path: string, body: unknown) => api<T>("PATCH", path, body);
export const del = <T = any>(path: string) => api<T>("DELETE", path);

export function qs(params: Record<string, string | number | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : "";
}

// usd writes an amount in USD with at least two decimals.
export function usd(n: number | undefined | null): string {
  if (n === undefined || n === null) return "–";
  const s = n.toFixed(6).replace(/0+$/, "");
  const [i, f = ""] = s.split(".");
  return `${i}.${f.padEnd(2, "0")}`;
}

export function when(iso: string | undefined | null): string {
  if (!iso) return "–";
  const d = new Date(iso);
  return isNaN(d.getTime()) ? iso : d.toLocaleString();
}

// Types of the public API (docs/pipelines.md, docs/accounts.md).
export type Problem = { node?: string; field?: string; message: string };
export type Validation = { valid: boolean; problems: Problem[] };
export type Contract = { inputs: { key: string; required: boolean; description?: string }[]; outputs: string[] };
export type VersionInfo = { version: number; createdAt: string; serving: boolean; graph?: Graph; contract?: Contract; note?: string };
export type Pipeline = {
  id: string;
  name: string;
  servingVersion: number | null;
  createdAt: string;
  updatedAt: string;
  draft?: Graph;
  draftValidation?: Validation;
  contract?: Contract;
  versions?: VersionInfo[];
};
export type GraphNode = { id: string; type: string; [field: string]: any };
export type Graph = { nodes: GraphNode[]; edges: { from: string; to: string }[] };
export type RunNode = {
  id: string;
  type: string;
  status: string;
  startedAt?: string;
  finishedAt?: string;
  promptTokens?: number;
  completionTokens?: number;
  costUsd?: number;
  error?: string;
};
export type Run = {
  runId: string;
  status: string;
  version: number;
  pipelineId?: string;
  startedAt: string;
  finishedAt?: string;
  durationMs?: number;
  kind?: string;
  usage?: { prompt: number; completion: number; total: number; costUsd: number };
  outputs?: Record<string, string>;
  error?: string;
  nodes?: RunNode[];
  workflowUrl?: string;
  truncatedOutputs?: string[];
};

// An enclave (docs/enclaves.md), as the enclave pages and the task pages
// read it.
export type Enclave = {
  id: string;
  name: string;
  description?: string;
  region?: string;
  status: string;
  endpoint?: string | null;
  sourceType?: string;
  pcrs?: Record<string, string>;
  error_message?: string | null;
  createdAt: string;
  updatedAt: string;
};
