// Cells' schedules: an ISO 8601 repeating interval, `R[n]/<start>/<duration>` ("R/2012-06-04T19:25:16Z/PT10M": every
// ten minutes from that date; `Rn`: n runs, R or R0: no end), and an optional minimum time between two runs.
// Durations are weeks, days, hours, minutes and seconds (months and years have no fixed length: refused).
import { BadRequestError } from "../errors";

export interface Schedule {
	/** Unix ms of the first occurrence. */
	start: number;
	intervalMs: number;
	/** Number of runs; 0 = no end. */
	repeat: number;
	minDeltaMs: number;
}

const DURATION = /^P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/;

/** An ISO 8601 duration in ms, or a 400 saying what is wrong with it. */
export function durationMs(text: string, what: string): number {
	const m = DURATION.exec(text);
	if (!m || text === "P" || text.endsWith("T")) throw new BadRequestError(`${what}: ${text} is not an ISO 8601 duration such as PT10M, PT1H30M or P1D (months and years are not supported)`);
	const [w, d, h, min, s] = m.slice(1).map((x) => (x ? Number(x) : 0));
	return Math.round(((((w * 7 + d) * 24 + h) * 60 + min) * 60 + s) * 1000);
}

export function parseSchedule(spec: string, minDelta?: string): Schedule {
	const what = "Job.Schedule.Iso8601Schedule";
	const parts = spec.split("/");
	if (parts.length !== 3 || !/^R\d*$/.test(parts[0])) throw new BadRequestError(`${what}: ${spec || "(empty)"} is not a repeating interval such as R/2024-01-01T00:00:00Z/PT10M`);
	const start = Date.parse(parts[1]);
	if (!/^\d{4}-\d{2}-\d{2}T/.test(parts[1]) || Number.isNaN(start)) throw new BadRequestError(`${what}: ${parts[1]} is not an ISO 8601 date-time`);
	const intervalMs = durationMs(parts[2], what);
	if (intervalMs < 1000) throw new BadRequestError(`${what}: the interval must be at least one second`);
	const repeat = parts[0].length > 1 ? Number(parts[0].slice(1)) : 0;
	const minDeltaMs = minDelta ? durationMs(minDelta, "Job.Schedule.Iso8601MinDelta") : 0;
	return { start, intervalMs, repeat, minDeltaMs };
}

/**
 * The first occurrence strictly after `after` (unix ms), no sooner than `minDeltaMs` after it when `after` was a run; null
 * when the repetitions are spent. Occurrences missed while no node ran are not caught up: the next one is.
 */
export function nextRun(s: Schedule, after: number, ran = false): number | null {
	const earliest = after + (ran ? s.minDeltaMs : 0);
	const k = earliest < s.start ? 0 : Math.floor((earliest - s.start) / s.intervalMs) + 1;
	if (s.repeat && k >= s.repeat) return null;
	return s.start + k * s.intervalMs;
}
