// A link to one file: its name, size and date, a preview when it has one, a download button.
import { useEffect, useState } from "preact/hooks";
import { formatDate, formatSize, type LinkSession, type TreeNode } from "../api";
import { Preview } from "./Preview";

export function FileView({ session, path, canPreview, canDownload }: { session: LinkSession; path: string; canPreview: boolean; canDownload: boolean }) {
	const [node, setNode] = useState<TreeNode | null>(null);
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
			{canPreview ? <Preview session={session} node={node} /> : null}
		</section>
	);
}
