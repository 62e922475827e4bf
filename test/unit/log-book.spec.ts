// LogBook's rules without a broker: audit sentences, chart buckets (calendar months for Y, the point under way
// scaled with its relevance, the links), CSV cells kept as text, and the query subset's 400s.
import assert from "node:assert/strict";
import { auditMessage, csvLine, LogBook } from "../../lib/logs/book";
import { parseLogQuery } from "../../lib/logs/query";
import type { LogsRepo } from "../../lib/db/logs";

describe("LogBook", () => {
	const NOW = Date.UTC(2026, 2, 15, 12, 30, 0); // 2026-03-15 12:30 UTC
	const calls: [number[], string | undefined][] = [];
	// Counts one event per hour everywhere: enough to see the buckets and the scaling.
	const repo = {
		async countSpans(_kind: string, msgId: string | undefined, edges: number[]) {
			calls.push([edges, msgId]);
			return edges.slice(1).map((to, i) => Math.round((to - edges[i]) / 3600_000));
		},
	} as unknown as LogsRepo;
	const book = new LogBook(repo, { now: () => NOW });

	it("says who did what to what, from where", () => {
		assert.equal(auditMessage({ action: "login.failed", actor: "eve", ip: "10.1.2.3", time: 0 }), "eve failed to log in from 10.1.2.3");
		assert.equal(auditMessage({ action: "node.delete", actor: "admin", target: "common-files/a", detail: "permanently", time: 0 }), "admin deleted common-files/a: permanently");
		assert.equal(auditMessage({ action: "role.delete", actor: "", target: "r1", time: 0 }), "Someone deleted role r1");
	});

	it("charts a day as 24 hours ending with the current one, scaled while under way", async () => {
		calls.length = 0;
		const r = await book.chart({ TimeRangeType: "D", MsgId: "login.failed" });
		assert.equal(r.Results.length, 24);
		assert.equal(r.Results[23].Start, Date.UTC(2026, 2, 15, 12) / 1000);
		assert.equal(r.Results[0].Start, Date.UTC(2026, 2, 14, 13) / 1000);
		assert.equal(r.Results[23].Name, "12:00");
		// Half of the current hour is known: 1 event so far counts as 2, with relevance 50.
		assert.deepEqual([r.Results[23].Count, r.Results[23].Relevance], [2, 50]);
		assert.deepEqual([r.Results[22].Count, r.Results[22].Relevance], [1, 100]);
		// One query for the whole chart: the 24 spans' 25 edges.
		assert.equal(calls.length, 1);
		assert.deepEqual([calls[0][0].length, calls[0][0][0], calls[0][0][24], calls[0][1]], [25, Date.UTC(2026, 2, 14, 13), Date.UTC(2026, 2, 15, 13), "login.failed"]);
		assert.deepEqual(r.Links.map((l) => l.Rel), ["FIRST", "PREV", "LAST"]);
		assert.equal(r.Links[1].RefTime, r.Results[0].Start - 1);
	});

	it("charts a year as 12 calendar months, and a past range links to the next one", async () => {
		const r = await book.chart({ TimeRangeType: "y", RefTime: Date.UTC(2025, 5, 10) / 1000 });
		assert.deepEqual(r.Results.map((p) => p.Name), ["2024-07", "2024-08", "2024-09", "2024-10", "2024-11", "2024-12", "2025-01", "2025-02", "2025-03", "2025-04", "2025-05", "2025-06"]);
		assert.equal(r.Results[7].End - r.Results[7].Start, 28 * 24 * 3600, "February 2025 has 28 days");
		assert.ok(r.Results.every((p) => p.Relevance === 100));
		assert.deepEqual(r.Links.map((l) => l.Rel), ["FIRST", "PREV", "NEXT", "LAST"]);
		await assert.rejects(book.chart({ TimeRangeType: "Q" }), /TimeRangeType/);
	});

	it("keeps CSV cells as text: quotes, line breaks and formula starts", () => {
		const line = csvLine({ Ts: 0, Level: "info", Logger: "auth", Msg: 'say "hi"\nbye', UserName: "=cmd|'/c calc'!A1" });
		assert.ok(line.startsWith("1970-01-01T00:00:00.000Z,0,info,auth,\"say \"\"hi\"\"\nbye\",,'=cmd|'/c calc'!A1,"));
	});

	it("understands the documented query subset and refuses the rest with a 400", () => {
		assert.equal(parseLogQuery("+Level:error +Ts:>1700000000 -Logger:api* disk").length, 4);
		for (const q of ["+Who:x", "+Ts:abc", "+Ts:1700*", "+Msg:>3", "a^2", "[1 TO 2]"]) assert.throws(() => parseLogQuery(q), (e: { code?: number }) => e.code === 400, q);
	});
});
