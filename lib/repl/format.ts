// Plain-text output of the REPL commands: aligned columns, sizes and dates an operator reads at a glance. No
// colours: the same text is asserted by tests and piped by scripts.

/** Rows under a header, each column as wide as its widest cell. */
export function table(header: string[], rows: (string | number | undefined)[][]): string {
	const cells = [header, ...rows.map((r) => r.map((c) => (c === undefined ? "" : String(c))))];
	const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
	return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : (c ?? "").padEnd(widths[i]))).join("  ").trimEnd()).join("\n");
}

export function bytes(n: number | undefined): string {
	if (n === undefined || !Number.isFinite(n)) return "";
	const units = ["B", "KB", "MB", "GB", "TB"];
	let v = n;
	let u = 0;
	while (v >= 1024 && u < units.length - 1) {
		v /= 1024;
		u++;
	}
	return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
}

/** Unix seconds as an ISO date-time (UTC, to the second); empty when unknown. */
export function date(seconds: number | string | undefined): string {
	const n = Number(seconds);
	if (!n) return "";
	return new Date(n * 1000).toISOString().replace(/\.\d+Z$/, "Z");
}

export function duration(seconds: number): string {
	const s = Math.floor(seconds);
	const d = Math.floor(s / 86400);
	const h = Math.floor((s % 86400) / 3600);
	const m = Math.floor((s % 3600) / 60);
	return d ? `${d}d${h}h` : h ? `${h}h${m}m` : m ? `${m}m${s % 60}s` : `${s % 60}s`;
}
