// The mails that tell people a share now includes them: a cell's new members (template Cell) and the users a
// public link was sent to (PublicFile / PublicFolder, each with its identification key in the address, `?u=<key>`,
// as Cells' share dialog mails them). What `mailer.queue` is asked, one request per distinct link address.
import type { MailQueueRequest, MailRecipient } from "../contracts/mailer";
import type { Invitation } from "./manager";

const EMAIL = /^[^\s@<>(),;:"\\[\]]+@[^\s@<>(),;:"\\[\]]+\.[^\s@<>(),;:"\\[\]]+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A TargetUsers key names a recipient: an email address, a user uuid, or a login. */
export function targetRecipient(key: string, display?: string): MailRecipient {
	if (EMAIL.test(key)) return { address: key, ...(display ? { name: display } : {}) };
	return UUID.test(key) ? { uuid: key } : { login: key };
}

export function invitationMails(inv: Invitation, inviterName: string): MailQueueRequest[] {
	const onBehalfOf = { name: inviterName };
	if (inv.kind === "cell") {
		return [{ to: inv.users.map((uuid) => ({ uuid })), templateId: "Cell", templateData: { Inviter: inviterName, Cell: inv.cell, LinkPath: `/ws/${inv.slug}/` }, onBehalfOf }];
	}
	const data: Record<string, string> = { Inviter: inviterName, [inv.folder ? "FolderName" : "FileName"]: inv.name };
	if (inv.accessEnd) data.Expire = new Date(inv.accessEnd * 1000).toUTCString();
	if (inv.maxDownloads) data.MaxDownloads = String(inv.maxDownloads);
	const absolute = /^https?:\/\//i.test(inv.url);
	return inv.targets.map((t) => {
		const url = `${inv.url}?u=${encodeURIComponent(t.key)}`;
		return { to: [targetRecipient(t.key, t.display)], templateId: inv.folder ? "PublicFolder" : "PublicFile", templateData: { ...data, ...(absolute ? { LinkUrl: url } : { LinkPath: url }) }, onBehalfOf };
	});
}
