// The English strings Cellar itself uses (login form, workspaces, errors). Cellar ships no translated
// front-end plugins, so this is the whole dictionary and English is the only language offered.
export const DEFAULT_LANGUAGE = "en-us";

export const AVAILABLE_LANGUAGES: Record<string, string> = { "en-us": "English" };

export const MESSAGES_EN: Readonly<Record<string, string>> = Object.freeze({
	"ajax_gui.login.title": "Log in to Cellar",
	"ajax_gui.login.legend": "Enter your login and password",
	"ajax_gui.login.login": "Login",
	"ajax_gui.login.password": "Password",
	"ajax_gui.login.submit": "Enter",
	"ajax_gui.login.failed": "Invalid login or password",
	"ajax_gui.login.locked": "This account is locked: please contact an administrator",
	"ajax_gui.logout": "Log out",
	"ajax_gui.session.expiring": "Your session is about to expire",
	"ajax_gui.session.expired": "Your session has expired: please log in again",
	"ajax_gui.workspace.common": "Common Files",
	"ajax_gui.workspace.personal": "My Files",
	"ajax_gui.workspace.cells": "Cells",
	"ajax_gui.workspace.homepage": "Welcome",
	"ajax_gui.workspace.settings": "Settings",
	"ajax_gui.action.upload": "Upload",
	"ajax_gui.action.download": "Download",
	"ajax_gui.action.new_folder": "New folder",
	"ajax_gui.action.rename": "Rename",
	"ajax_gui.action.copy": "Copy",
	"ajax_gui.action.move": "Move",
	"ajax_gui.action.delete": "Delete",
	"ajax_gui.action.restore": "Restore",
	"ajax_gui.action.share": "Share",
	"ajax_gui.error.forbidden": "You are not allowed to do this",
	"ajax_gui.error.not_found": "This item does not exist",
	"ajax_gui.error.unavailable": "The server is temporarily unavailable, please retry",
	"ajax_gui.error.generic": "Something went wrong",
});
