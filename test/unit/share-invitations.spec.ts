// The mails a share change asks the mailer for (lib/share/invitations) and the text of a digest mail
// (lib/activity/digest), without a broker.
import assert from "node:assert/strict";
import { invitationMails, targetRecipient } from "../../lib/share/invitations";
import { digestText, sendDigests } from "../../lib/activity/digest";
import type { Identity } from "../../lib/auth/identity";

const alice = { Uuid: "u-alice", Login: "alice", Profile: "standard", GroupPath: "/", Roles: ["u-alice"], TokenKind: "session", ExpiresAt: 0 } as Identity;

describe("share invitations and digest mails", () => {
	it("names a TargetUsers key as an address, a user uuid or a login", () => {
		assert.deepEqual(targetRecipient("bob@example.com", "Bob"), { address: "bob@example.com", name: "Bob" });
		assert.deepEqual(targetRecipient("0b0b0b0b-1111-4222-8333-444455556666"), { uuid: "0b0b0b0b-1111-4222-8333-444455556666" });
		assert.deepEqual(targetRecipient("bob"), { login: "bob" });
	});

	it("mails a cell's new members the Cell template, and each link target its own address", () => {
		assert.deepEqual(invitationMails({ kind: "cell", inviter: alice, cell: "Project", slug: "project", users: ["u-bob", "u-carol"] }, "Alice"), [
			{ to: [{ uuid: "u-bob" }, { uuid: "u-carol" }], templateId: "Cell", templateData: { Inviter: "Alice", Cell: "Project", LinkPath: "/ws/project/" }, onBehalfOf: { name: "Alice" } },
		]);
		const mails = invitationMails({ kind: "link", inviter: alice, name: "report.pdf", folder: false, url: "/public/abc", targets: [{ key: "bob@example.com" }, { key: "carol" }], accessEnd: 86400, maxDownloads: 3 }, "Alice");
		assert.equal(mails.length, 2);
		assert.equal(mails[0].templateId, "PublicFile");
		assert.deepEqual(mails[0].templateData, { Inviter: "Alice", FileName: "report.pdf", Expire: "Fri, 02 Jan 1970 00:00:00 GMT", MaxDownloads: "3", LinkPath: "/public/abc?u=bob%40example.com" });
		assert.deepEqual(mails[1].to, [{ login: "carol" }]);
		// An absolute public base (PUBLIC_BASEURI) is a LinkUrl.
		const abs = invitationMails({ kind: "link", inviter: alice, name: "docs", folder: true, url: "https://files.example.com/public/abc", targets: [{ key: "bob" }] }, "Alice");
		assert.equal(abs[0].templateId, "PublicFolder");
		assert.equal(abs[0].templateData?.LinkUrl, "https://files.example.com/public/abc?u=bob");
	});

	it("writes a digest as plain lines under each workspace or cell", () => {
		const { text, count } = digestText({
			type: "Digest",
			items: [
				{ type: "Cell", name: "Project", items: [{ type: "Create", summary: "User [alice](user://alice) created [a.txt](doc://1)" }] },
				{ type: "Share", summary: "User [alice](user://alice) shared [Project](workspaces://2) with you" },
			],
		});
		assert.equal(count, 2);
		assert.equal(text, "Cell Project:\n- User alice created a.txt\n- User alice shared Project with you");
	});

	it("a run mails users with an email and moves their marker; without an email nothing moves", async () => {
		const queued: string[] = [];
		const marks: [string, string][] = [];
		const mailed = await sendDigests(
			{
				owners: async () => [{ userId: "bob", newest: "2" }, { userId: "carol", newest: "3" }],
				identityOf: async (login) => ({ ...alice, Login: login }),
				hasEmail: async (login) => login === "bob",
				pending: async () => ({ digest: { type: "Digest", items: [{ type: "Create", summary: "x" }] }, upTo: "2" }),
				queue: async (login) => void queued.push(login),
				markSent: async (login, seq) => void marks.push([login, seq]),
			},
			() => undefined,
		);
		assert.equal(mailed, 1);
		assert.deepEqual(queued, ["bob"]);
		assert.deepEqual(marks, [["bob", "2"]]);
	});
});
