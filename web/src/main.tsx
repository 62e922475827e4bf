import { render } from "preact";
import { readBoot } from "./boot";
import { App } from "./public/App";
import "./style.css";

const root = document.getElementById("app");
if (root) {
	// The server wrote a plain version of the page (a refusal readable without JavaScript): the app replaces it.
	root.textContent = "";
	render(<App info={readBoot()} />, root);
}
