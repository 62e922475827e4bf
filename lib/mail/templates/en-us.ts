// English mail texts. `{Name}` is replaced by the template data of that name (Title, Url and the recipient's Name
// are always there); a line whose placeholder has no value is left out. Keys follow Cells' mailer bundle
// (Mail.<TemplateId>.Subject / Intros / LinkLabel / LinkInstructions / Outros).
export const enUs: Record<string, string> = {
	"Mail.Main.Greeting": "Hello {Name},",
	"Mail.Main.Signature": "Sincerely,\n{Title}",
	"Mail.Main.Trouble": "If the button does not work, copy this address into your browser:",
	"Mail.Main.Footer": "Sent by {Title} ({Url}).",

	"Mail.ResetPassword.Subject": "Reset your password on {Title}",
	"Mail.ResetPassword.Intros": "Someone (hopefully you) asked to reset the password of the account {Login} on {Title}.",
	"Mail.ResetPassword.LinkInstructions": "To choose a new password, open this link in your browser:",
	"Mail.ResetPassword.LinkLabel": "Reset my password",
	"Mail.ResetPassword.Outros":
		"or enter this reset code: {Code}\nThe link is valid for {Minutes} minutes and can be used once.\nIf you did not ask for this, ignore this message: your password stays unchanged.",

	"Mail.ResetPasswordDone.Subject": "Your password was changed on {Title}",
	"Mail.ResetPasswordDone.Intros": "The password of the account {Login} was just reset, and every open session was signed out.",
	"Mail.ResetPasswordDone.Outros": "If you did not do this, contact your administrator at once.",

	"Mail.Cell.Subject": "{Inviter} added you to the cell {Cell}",
	"Mail.Cell.Intros": "{Inviter} has included you in the cell {Cell} on {Title}: you can now share files and folders there together.",
	"Mail.Cell.LinkInstructions": "To open the cell:",
	"Mail.Cell.LinkLabel": "Open {Cell}",

	"Mail.PublicFile.Subject": "{Inviter} is sharing a file with you",
	"Mail.PublicFile.Intros": "{Inviter} is sharing the file {FileName} with you.\n{Message}\nThe link expires on {Expire}.\nIt can be downloaded {MaxDownloads} times.",
	"Mail.PublicFile.LinkInstructions": "To see the file in your browser:",
	"Mail.PublicFile.LinkLabel": "Open {FileName}",

	"Mail.PublicFolder.Subject": "{Inviter} is sharing a folder with you",
	"Mail.PublicFolder.Intros": "{Inviter} is sharing the folder {FolderName} with you.\n{Message}\nThe link expires on {Expire}.\nIt can be downloaded {MaxDownloads} times.",
	"Mail.PublicFolder.LinkInstructions": "To see the folder in your browser:",
	"Mail.PublicFolder.LinkLabel": "Open {FolderName}",

	"Mail.Digest.Subject": "Your {Title} notifications",
	"Mail.Digest.Intros": "Here is what happened on {Title} since your last digest.",
	"Mail.Digest.LinkInstructions": "To see everything in {Title}:",
	"Mail.Digest.LinkLabel": "Open {Title}",

	"Mail.Welcome.Subject": "Welcome to {Title}",
	"Mail.Welcome.Intros": "An account was created for you on {Title}. Your login is {Login}.\nYour password is {Password}: change it when you first log in.",
	"Mail.Welcome.LinkInstructions": "To log in:",
	"Mail.Welcome.LinkLabel": "Log in to {Title}",

	"Mail.Invite.Subject": "{Inviter} has invited you to {Title}",
	"Mail.Invite.Intros": "{Inviter} created an account for you on {Title}. Your login is {Login}.\nYour password is {Password}: change it when you first log in.",
	"Mail.Invite.LinkInstructions": "To log in:",
	"Mail.Invite.LinkLabel": "Log in to {Title}",

	"Mail.AdminTestMail.Subject": "{Title} is sending you a test mail",
	"Mail.AdminTestMail.Intros": "{Message}",
	"Mail.AdminTestMail.LinkInstructions": "To open {Title}:",
	"Mail.AdminTestMail.LinkLabel": "Open {Title}",
};
