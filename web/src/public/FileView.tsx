// A link to one file: its name, size and date, a preview when it has one, a download button.
import { useEffect, useState } from "preact/hooks";
import { formatDate, formatSize, type LinkSession, type TreeNode } from "../api";
import { Preview, previewKind } from "./Preview";

interface Props {
	session: LinkSession;
	path: string;
	canPreview: boolean;
	canDownload: boolean;
	/** The link counts downloads: every read of the file is one (the /io gateway counts them), previews too. */
	counted: boolean;
}

export function FileView({ session, path, canPreview, canDownload, counted }: Props) {
	const [node, setNode] = useState<TreeNode | null>(null);
	// A counted link is not spent by merely opening its page: the preview waits to be asked for.
	const [previewing, setPreviewing] = useState(!counted);
	const [error, setError] = useState("");
	useEffect(() => {
		session.stats([path]).then(
			(nodes) => (nodes[0] ? setNode(nodes[0]) : setError("The shared file is not there any more.")),
			(e: Error) => setError(e.message),
		);
	}, [path]);
	if (error) return <p class="error" role="alert">{error}</p>;
	if (!node) return <p class="loading">Loading…</p>;
	return (
		<section class="file">
			<div class="file-head">
				<div>
					<h2 class="name">{node.Name}</h2>
					<p class="meta">
						<span class="size">{formatSize(node.Size)}</span> · <time>{formatDate(node.MTime)}</time>
					</p>
				</div>
				{canDownload ? (
					<a class="button" href={session.fileUrl(node.Path, node.Name)} download={node.Name}>
						Download
					</a>
				) : null}
			</div>
			{canPreview && previewKind(node) && !previewing ? (
				<button type="button" class="link show-preview" onClick={() => setPreviewing(true)}>
					Show a preview (it counts as one of this link's downloads)
				</button>
			) : null}
			{canPreview && previewing ? <Preview session={session} node={node} /> : null}
		</section>
	);
}
