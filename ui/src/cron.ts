import { Cron } from "croner";

// The next firings of a task's schedule, computed in the browser with
// croner under the rules the server checks schedules by (internal/tasks,
// robfig/cron's standard parser; docs/tasks.md): five fields, names, ranges,
// lists and steps, the descriptors, and "@every <duration>" aligned to the
// Unix epoch. What robfig/cron refuses is refused here too before croner
// sees it (its extensions L, W, # and six-field patterns), "?" means "*" as
// it does there, and day-of-month and day-of-week combine with OR as in
// robfig/cron. app/browsertest/manage_test.go compares these firings with
// robfig/cron's for several expressions.

const descriptors: Record<string, string> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

const names = /^(JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC|SUN|MON|TUE|WED|THU|FRI|SAT)$/i;

// parseDuration reads Go's duration syntax ("90s", "1h30m", "1.5h").
function parseDuration(s: string): number | null {
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, "µs": 1e-3, ms: 1, s: 1000, m: 60000, h: 3600000 };
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/y;
  let ms = 0;
  let i = 0;
  if (!s) return null;
  while (i < s.length) {
    re.lastIndex = i;
    const m = re.exec(s);
    if (!m) return null;
    ms += parseFloat(m[1]) * unit[m[2]];
    i = re.lastIndex;
  }
  return ms;
}

export type Firings = { from: Date; runs: Date[]; error?: undefined } | { error: string; from: Date; runs?: undefined };

// nextFirings gives the next n firings after from, or why the schedule is
// not one the server takes.
export function nextFirings(schedule: string, timezone: string, n = 5, from = new Date()): Firings {
  const s = schedule.trim();
  if (!s) return { error: "is empty", from };
  if (/^(CRON_)?TZ=/.test(s)) return { error: "give the time zone in the timezone field, not as a TZ= prefix", from };
  if (s.startsWith("@every")) {
    const rest = s.slice("@every".length).trim();
    if (!rest) return { error: '"@every" needs a duration, e.g. "@every 30s" or "@every 1h"', from };
    const ms = parseDuration(rest);
    if (ms === null) return { error: `"${rest}" is not a duration (use s, m, h: "@every 90s", "@every 1h30m")`, from };
    if (ms < 1000) return { error: "the interval must be at least 1s", from };
    if (ms % 1000 !== 0) return { error: "the interval must be a whole number of seconds", from };
    if (ms > 366 * 24 * 3600 * 1000) return { error: "the interval must be at most 366 days; use a cron expression for longer periods", from };
    // Epoch-aligned, as Temporal's interval specs are.
    const first = (Math.floor(from.getTime() / ms) + 1) * ms;
    return { from, runs: Array.from({ length: n }, (_, i) => new Date(first + i * ms)) };
  }
  let pattern = s;
  if (s.startsWith("@")) {
    pattern = descriptors[s];
    if (!pattern) return { error: `"${s}" is not a descriptor (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, @every <duration>)`, from };
  }
  const fields = pattern.split(/\s+/);
  if (fields.length !== 5) {
    return { error: `"${s}" has ${fields.length} fields; a cron expression has 5: minute hour day-of-month month day-of-week (e.g. "*/15 * * * *")`, from };
  }
  for (const f of fields) {
    for (const part of f.split(",")) {
      const words = part.split(/[-/]/).filter((w) => /[A-Za-z]/.test(w));
      if (!/^[0-9A-Za-z*?\-/]+$/.test(part) || words.some((w) => !names.test(w))) {
        return { error: `"${f}" is not a valid cron field`, from };
      }
    }
  }
  // Day of week is 0–6 there (Sunday 0; 7 is refused).
  if (fields[4].split(/[^0-9]+/).some((d) => d !== "" && Number(d) > 6) && !/\/\d+$/.test(fields[4])) {
    return { error: `"${s}" is not a valid cron expression: day of week is 0 (Sunday) to 6`, from };
  }
  // robfig/cron reads "?" as "*".
  pattern = fields.map((f) => (f === "?" ? "*" : f)).join(" ");
  try {
    const c = new Cron(pattern, { timezone: timezone || "UTC", mode: "5-part", sloppyRanges: true, domAndDow: false, paused: true });
    return { from, runs: c.nextRuns(n, from) };
  } catch (e) {
    return { error: `"${s}" is not a valid cron expression: ${e instanceof Error ? e.message : String(e)}`, from };
  }
}

// inZone writes a time as a person in that zone reads it.
export function inZone(d: Date, timezone: string): string {
  try {
    return d.toLocaleString(undefined, { timeZone: timezone || "UTC", weekday: "short", year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short" });
  } catch {
    return d.toISOString();
  }
}
