// Jobs as a client runs them through the gateway: start one (PUT /a/jobs/user/{name}), poll its tasks.
import assert from "node:assert/strict";
import type { ApiResponse, TestNode } from "./node";

type Api = TestNode["api"];

export const FINAL = ["Finished", "Error", "Interrupted"];

export async function job(api: Api, token: string, name: string, params: unknown): Promise<ApiResponse> {
	return api("PUT", `/a/jobs/user/${encodeURIComponent(name)}`, { JobName: name, JsonParameters: typeof params === "string" ? params : JSON.stringify(params) }, token);
}

export async function startJob(api: Api, token: string, name: string, params: unknown): Promise<string> {
	const r = await job(api, token, name, params);
	assert.equal(r.status, 200, r.text);
	assert.ok(r.body.JobUuid);
	return r.body.JobUuid as string;
}

export async function tasks(api: Api, token: string, jobId: string): Promise<any[]> {
	const r = await api("POST", "/a/jobs/user", { JobIDs: [jobId] }, token);
	assert.equal(r.status, 200, r.text);
	return r.body.Jobs?.[0]?.Tasks ?? [];
}

/** Waits until the job's newest task is in one of `statuses`. */
export async function waitTask(api: Api, token: string, jobId: string, statuses = FINAL, ms = 20_000): Promise<any> {
	const until = Date.now() + ms;
	for (;;) {
		const [t] = await tasks(api, token, jobId);
		if (t && statuses.includes(t.Status)) return t;
		if (Date.now() > until) assert.fail(`task of ${jobId} still ${t?.Status} (${t?.StatusMessage})`);
		await new Promise((r) => setTimeout(r, 40));
	}
}

export async function finished(api: Api, token: string, name: string, params: unknown): Promise<{ jobId: string; task: any }> {
	const jobId = await startJob(api, token, name, params);
	const task = await waitTask(api, token, jobId);
	assert.equal(task.Status, "Finished", `${name}: ${task.StatusMessage}`);
	return { jobId, task };
}
