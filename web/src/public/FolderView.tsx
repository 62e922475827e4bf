// A link to a folder: its contents (into subfolders too), each file previewed or downloaded, the whole folder
// (or a subfolder) downloaded as one zip, and an upload zone when the link allows uploads.
import { useEffect, useState } from "preact/hooks";
import { formatDate, formatSize, type LinkSession, type TreeNode } from "../api";
import { Preview, previewKind } from "./Preview";
import { UploadZone } from "./UploadZone";

interface Props {
	session: LinkSession;
	root: string;
	/** How the shared folder is called on the page and in its zip (the link's label: the root path is a slug). */
	rootName: string;
	canPreview: boolean;
	canDownload: boolean;
	canUpload: boolean;
}

export function FolderView({ session, root, rootName, canPreview, canDownload, canUpload }: Props) {
	const [folder, setFolder] = useState(root);
	const [nodes, setNodes] = useState<TreeNode[] | null>(null);
	const [error, setError] = useState("");
	const [shown, setShown] = useState<TreeNode | null>(null);
	const [zipping, setZipping] = useState(false);
	const [generation, setGeneration] = useState(0);

	useEffect(() => {
		let live = true;
		setError("");
		session.list(folder).then(
			(n) => live && setNodes(n),
			(e: Error) => live && setError(e.message),
		);
		return () => {
			live = false;
		};
	}, [folder, generation]);

	const zip = async (paths: string[], name: string) => {
		setZipping(true);
		setError("");
		try {
			window.location.assign(await session.zipUrl(paths, name));
		} catch (e) {
			setError(`The zip could not be prepared: ${(e as Error).message}`);
		} finally {
			setZipping(false);
		}
	};

	const crumbs = folder === root ? [] : folder.slice(root.length + 1).split("/");
	return (
		<section class="folder">
			<nav class="crumbs" aria-label="Folder">
				<button type="button" class="link" onClick={() => (setFolder(root), setShown(null))} disabled={folder === root}>
					{rootName}
				</button>
				{crumbs.map((c, i) => (
					<span key={i}>
						{" / "}
						<button type="button" class="link" onClick={() => (setFolder([root, ...crumbs.slice(0, i + 1)].join("/")), setShown(null))} disabled={i === crumbs.length - 1}>
							{c}
						</button>
					</span>
				))}
				{canDownload && nodes && nodes.length > 0 ? (
					<button type="button" class="button download-all" disabled={zipping} onClick={() => zip(nodes.map((n) => n.Path), folder === root ? rootName : (folder.split("/").pop() ?? ""))}>
						{zipping ? "Preparing…" : "Download all (zip)"}
					</button>
				) : null}
			</nav>
			{error ? <p class="error" role="alert">{error}</p> : null}
			{nodes === null && !error ? <p class="loading">Loading…</p> : null}
			{nodes && nodes.length === 0 ? <p class="empty">This folder is empty.</p> : null}
			{nodes && nodes.length > 0 ? (
				<table class="listing">
					<thead>
						<tr>
							<th>Name</th>
							<th class="num">Size</th>
							<th>Modified</th>
							<th />
						</tr>
					</thead>
					<tbody>
						{nodes.map((n) => (
							<tr key={n.Path} data-name={n.Name} class={shown?.Path === n.Path ? "shown" : ""}>
								<td class="name">
									{n.IsFolder ? (
										<button type="button" class="link folder-link" onClick={() => (setFolder(n.Path), setShown(null))}>
											{n.Name}/
										</button>
									) : canPreview && previewKind(n) ? (
										<button type="button" class="link" onClick={() => setShown(shown?.Path === n.Path ? null : n)}>
											{n.Name}
										</button>
									) : (
										n.Name
									)}
								</td>
								<td class="num size">{n.IsFolder ? "" : formatSize(n.Size)}</td>
								<td>
									<time>{formatDate(n.MTime)}</time>
								</td>
								<td class="actions">
									{canDownload && !n.IsFolder ? (
										<a class="button small" href={session.fileUrl(n.Path, n.Name)} download={n.Name}>
											Download
										</a>
									) : null}
									{canDownload && n.IsFolder ? (
										<button type="button" class="button small" disabled={zipping} onClick={() => zip([n.Path], n.Name)}>
											Zip
										</button>
									) : null}
								</td>
							</tr>
						))}
					</tbody>
				</table>
			) : null}
			{shown ? (
				<div class="shown-file">
					<h2>{shown.Name}</h2>
					<Preview session={session} node={shown} />
				</div>
			) : null}
			{canUpload ? <UploadZone session={session} folder={folder} onUploaded={() => setGeneration((g) => g + 1)} /> : null}
		</section>
	);
}
