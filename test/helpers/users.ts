// Standard users made by the administrator through PUT /a/user/<login>, logged in: the preamble of most
// sharing tests.
import assert from "node:assert/strict";
import type { TestNode } from "./node";

export interface TestUser {
	login: string;
	uuid: string;
	password: string;
	token: string;
}

/**
 * Creates each user (profile standard, a display name and an email `<login>@example.com` unless `displayName: false`
 * or `email: false`; password `<login>-Pass-12345`) and logs them in.
 */
export async function addUsers(node: TestNode, admin: string, logins: string[], opts: { email?: boolean; displayName?: boolean } = {}): Promise<Record<string, TestUser>> {
	const out: Record<string, TestUser> = {};
	for (const login of logins) {
		const password = `${login}-Pass-12345`;
		const Attributes: Record<string, string> = { profile: "standard" };
		if (opts.displayName !== false) Attributes.displayName = login[0].toUpperCase() + login.slice(1);
		if (opts.email !== false) Attributes.email = `${login}@example.com`;
		const r = await node.api("PUT", `/a/user/${login}`, { Password: password, Attributes }, admin);
		assert.equal(r.status, 200, r.text);
		out[login] = { login, uuid: r.body.Uuid, password, token: await node.login(login, password) };
	}
	return out;
}

/** Creates one standard user with only a profile (no email, no display name) and logs them in: their token. */
export async function addUser(node: TestNode, admin: string, login: string, password: string): Promise<string> {
	const r = await node.api("PUT", `/a/user/${login}`, { Password: password, Attributes: { profile: "standard" } }, admin);
	assert.equal(r.status, 200, r.text);
	return node.login(login, password);
}
