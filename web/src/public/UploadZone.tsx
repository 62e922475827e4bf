// Drag-and-drop (or chosen) files uploaded one after the other into the link's folder, each with its progress.
import { useRef, useState } from "preact/hooks";
import { formatSize, type LinkSession } from "../api";

interface Item {
	id: number;
	name: string;
	size: number;
	sent: number;
	state: "waiting" | "uploading" | "done" | "failed";
	error?: string;
}

let nextId = 1;

export function UploadZone({ session, folder, onUploaded }: { session: LinkSession; folder: string; onUploaded?: () => void }) {
	const [items, setItems] = useState<Item[]>([]);
	const [over, setOver] = useState(false);
	const queue = useRef<Promise<void>>(Promise.resolve());
	const input = useRef<HTMLInputElement>(null);

	const update = (id: number, patch: Partial<Item>) => setItems((all) => all.map((i) => (i.id === id ? { ...i, ...patch } : i)));

	const add = (files: FileList | File[] | null | undefined) => {
		for (const file of Array.from(files ?? [])) {
			const item: Item = { id: nextId++, name: file.name, size: file.size, sent: 0, state: "waiting" };
			setItems((all) => [...all, item]);
			queue.current = queue.current.then(async () => {
				update(item.id, { state: "uploading" });
				try {
					await session.upload(folder, file, (sent) => update(item.id, { sent }));
					update(item.id, { state: "done", sent: file.size });
					onUploaded?.();
				} catch (e) {
					update(item.id, { state: "failed", error: (e as Error).message });
				}
			});
		}
	};

	return (
		<section class="upload">
			<div
				class={over ? "dropzone over" : "dropzone"}
				onDragOver={(e) => {
					e.preventDefault();
					if (e.dataTransfer) e.dataTransfer.dropEffect = "copy";
					setOver(true);
				}}
				onDragLeave={() => setOver(false)}
				onDrop={(e) => {
					e.preventDefault();
					setOver(false);
					add(e.dataTransfer?.files);
				}}
			>
				<p>Drop files here to upload them</p>
				<p>
					or{" "}
					<button type="button" class="link" onClick={() => input.current?.click()}>
						choose files
					</button>
				</p>
				<input
					ref={input}
					class="file-input"
					type="file"
					multiple
					onChange={(e) => {
						const el = e.target as HTMLInputElement;
						add(el.files);
						el.value = "";
					}}
				/>
			</div>
			{items.length ? (
				<ul class="uploads">
					{items.map((i) => (
						<li key={i.id} data-name={i.name} data-state={i.state}>
							<span class="name">{i.name}</span>
							<progress max={i.size || 1} value={i.state === "done" ? i.size || 1 : i.sent} />
							<span class="state">{i.state === "done" ? "Uploaded" : i.state === "failed" ? `Failed: ${i.error}` : i.state === "uploading" ? `${formatSize(i.sent)} of ${formatSize(i.size)}` : "Waiting"}</span>
						</li>
					))}
				</ul>
			) : null}
		</section>
	);
}
