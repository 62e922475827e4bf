// Textes français des mails (mêmes clés et mêmes règles que en-us.ts ; une clé absente retombe sur l'anglais).
export const fr: Record<string, string> = {
	"Mail.Main.Greeting": "Bonjour {Name},",
	"Mail.Main.Signature": "Cordialement,\n{Title}",
	"Mail.Main.Trouble": "Si le bouton ne fonctionne pas, copiez cette adresse dans votre navigateur :",
	"Mail.Main.Footer": "Envoyé par {Title} ({Url}).",

	"Mail.ResetPassword.Subject": "Réinitialisez votre mot de passe sur {Title}",
	"Mail.ResetPassword.Intros": "Quelqu'un (vous, espérons-le) a demandé à réinitialiser le mot de passe du compte {Login} sur {Title}.",
	"Mail.ResetPassword.LinkInstructions": "Pour choisir un nouveau mot de passe, ouvrez ce lien dans votre navigateur :",
	"Mail.ResetPassword.LinkLabel": "Réinitialiser mon mot de passe",
	"Mail.ResetPassword.Outros":
		"ou saisissez ce code : {Code}\nLe lien est valable {Minutes} minutes, une seule fois.\nSi vous n'avez rien demandé, ignorez ce message : votre mot de passe ne change pas.",

	"Mail.ResetPasswordDone.Subject": "Votre mot de passe a été changé sur {Title}",
	"Mail.ResetPasswordDone.Intros": "Le mot de passe du compte {Login} vient d'être réinitialisé, et toutes les sessions ouvertes ont été fermées.",
	"Mail.ResetPasswordDone.Outros": "Si ce n'est pas vous, prévenez immédiatement votre administrateur.",

	"Mail.Cell.Subject": "{Inviter} vous a ajouté à la cellule {Cell}",
	"Mail.Cell.Intros": "{Inviter} vous a inclus dans la cellule {Cell} sur {Title} : vous pouvez y partager fichiers et dossiers ensemble.",
	"Mail.Cell.LinkInstructions": "Pour ouvrir la cellule :",
	"Mail.Cell.LinkLabel": "Ouvrir {Cell}",

	"Mail.PublicFile.Subject": "{Inviter} partage un fichier avec vous",
	"Mail.PublicFolder.Subject": "{Inviter} partage un dossier avec vous",
	"Mail.Digest.Subject": "Vos notifications {Title}",
};
