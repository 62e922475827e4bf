// A public link's page, as Cells' minisite: log in as the link's hidden user (asking the password when the link
// has one), then show the shared file, the shared folder, or a drop box, as the link's permissions allow.
import { useEffect, useState } from "preact/hooks";
import type { PublicLinkInfo } from "../boot";
import { ApiError, formatDate, LinkSession } from "../api";
import { REFUSALS, RESTRICTED } from "../../../lib/web/texts";
import { LINK_RESTRICTED_CODE, presetPassword } from "../../../lib/share/minisite";
import { PasswordForm } from "./PasswordForm";
import { FileView } from "./FileView";
import { FolderView } from "./FolderView";
import { UploadZone } from "./UploadZone";

export function App({ info }: { info: PublicLinkInfo }) {
	if (info.Status !== "ok") return <Refusal status={info.Status} />;
	return <LinkPage info={info} />;
}

function Refusal({ status }: { status: Exclude<PublicLinkInfo["Status"], "ok"> | "restricted" }) {
	const text = status === "restricted" ? RESTRICTED : (REFUSALS[status] ?? REFUSALS.unknown);
	return (
		<main class="page">
			<section class="refusal" data-status={status}>
				<h1>{text.title}</h1>
				<p>{text.detail}</p>
			</section>
		</main>
	);
}

/** Upload-only links: the visitor drops files and sees nothing of what the folder holds. */
function isDropBox(info: PublicLinkInfo): boolean {
	const perms = info.Permissions ?? [];
	return (info.TemplateName ?? "").startsWith("pydio_dropbox") || (perms.includes("Upload") && !perms.includes("Preview") && !perms.includes("Download"));
}

function LinkPage({ info }: { info: PublicLinkInfo }) {
	const [session, setSession] = useState<LinkSession | null>(null);
	const [error, setError] = useState("");
	const [busy, setBusy] = useState(false);
	const [password, setPassword] = useState("");
	const [restricted, setRestricted] = useState(false);
	const login = info.Login ?? "";

	const open = async (password: string) => {
		setBusy(true);
		setError("");
		try {
			setSession(await LinkSession.login(info.Hash, login, password));
			setPassword(password);
		} catch (e) {
			const err = e as ApiError;
			// A link restricted to the users it was mailed to opens with none of its passwords from this address.
			if (err.code === LINK_RESTRICTED_CODE) setRestricted(true);
			else setError(info.PasswordRequired && (err.status === 401 || err.status === 403) ? "Wrong password: try again." : `This link cannot be opened: ${err.message}`);
		} finally {
			setBusy(false);
		}
	};

	useEffect(() => {
		if (!info.PasswordRequired && login) void open(presetPassword(login));
	}, []);

	// Tokens are short-lived: log in again a minute before this one ends, so links and uploads keep working on a
	// page left open (the new token re-renders every download link).
	useEffect(() => {
		if (!session?.expiresAt || !password) return;
		const wait = Math.max(10_000, session.expiresAt * 1000 - Date.now() - 60_000);
		const timer = setTimeout(() => {
			LinkSession.login(info.Hash, login, password).then(setSession, (e: Error) => setError(`The session ended and could not be renewed: ${e.message}`));
		}, wait);
		return () => clearTimeout(timer);
	}, [session, password]);

	if (restricted) return <Refusal status="restricted" />;
	const perms = info.Permissions ?? [];
	return (
		<main class="page">
			<header class="head">
				<h1>{info.Label || "Shared with you"}</h1>
				{info.Description ? <p class="description">{info.Description}</p> : null}
				<LinkLimits info={info} />
			</header>
			{!login ? <p class="error">This link has no visitor account: it cannot be opened.</p> : null}
			{login && !session && info.PasswordRequired ? <PasswordForm busy={busy} error={error} onSubmit={open} /> : null}
			{login && !session && !info.PasswordRequired ? error ? <p class="error" role="alert">{error}</p> : <p class="loading">Opening the link…</p> : null}
			{session && error ? <p class="error" role="alert">{error}</p> : null}
			{session && info.RootPath ? (
				isDropBox(info) && !info.RootIsFile ? (
					<>
						<p class="hint">Files you drop here go to the person who shared this link: you will not see what others sent.</p>
						<UploadZone session={session} folder={info.RootPath} />
					</>
				) : info.RootIsFile ? (
					<FileView session={session} path={info.RootPath} canPreview={perms.includes("Preview")} canDownload={perms.includes("Download")} counted={!!info.MaxDownloads} />
				) : (
					<FolderView session={session} root={info.RootPath} rootName={info.Label || info.RootPath.split("/").pop() || "shared"} canPreview={perms.includes("Preview")} canDownload={perms.includes("Download")} canUpload={perms.includes("Upload")} />
				)
			) : null}
		</main>
	);
}

function LinkLimits({ info }: { info: PublicLinkInfo }) {
	const parts: string[] = [];
	if (info.MaxDownloads) parts.push(`${Math.max(0, info.MaxDownloads - (info.CurrentDownloads ?? 0))} of ${info.MaxDownloads} downloads left`);
	if (info.AccessEnd) parts.push(`available until ${formatDate(info.AccessEnd)}`);
	return parts.length ? <p class="limits">{parts.join(" · ")}</p> : null;
}
