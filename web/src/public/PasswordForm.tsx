import { useState } from "preact/hooks";

export function PasswordForm({ busy, error, onSubmit }: { busy: boolean; error: string; onSubmit: (password: string) => void }) {
	const [password, setPassword] = useState("");
	return (
		<form
			class="password"
			onSubmit={(e) => {
				e.preventDefault();
				if (password) onSubmit(password);
			}}
		>
			<label for="link-password">This link is protected by a password</label>
			<div class="row">
				<input id="link-password" name="password" type="password" autocomplete="current-password" autofocus value={password} onInput={(e) => setPassword((e.target as HTMLInputElement).value)} />
				<button type="submit" disabled={busy || !password}>
					{busy ? "Checking…" : "Open"}
				</button>
			</div>
			{error ? (
				<p class="error" role="alert">
					{error}
				</p>
			) : null}
		</form>
	);
}
