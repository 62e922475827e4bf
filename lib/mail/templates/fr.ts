// French mail texts: the same keys and rules as en-us.ts (a test checks that none is missing).
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
	"Mail.PublicFile.Intros": "{Inviter} partage le fichier {FileName} avec vous.\n{Message}\nLe lien expire le {Expire}.\nIl peut être téléchargé {MaxDownloads} fois.",
	"Mail.PublicFile.LinkInstructions": "Pour voir le fichier dans votre navigateur :",
	"Mail.PublicFile.LinkLabel": "Ouvrir {FileName}",

	"Mail.PublicFolder.Subject": "{Inviter} partage un dossier avec vous",
	"Mail.PublicFolder.Intros": "{Inviter} partage le dossier {FolderName} avec vous.\n{Message}\nLe lien expire le {Expire}.\nIl peut être téléchargé {MaxDownloads} fois.",
	"Mail.PublicFolder.LinkInstructions": "Pour voir le dossier dans votre navigateur :",
	"Mail.PublicFolder.LinkLabel": "Ouvrir {FolderName}",

	"Mail.Digest.Subject": "Vos notifications {Title}",
	"Mail.Digest.Intros": "Voici ce qui s'est passé sur {Title} depuis votre dernier résumé.",
	"Mail.Digest.LinkInstructions": "Pour tout voir dans {Title} :",
	"Mail.Digest.LinkLabel": "Ouvrir {Title}",

	"Mail.Welcome.Subject": "Bienvenue sur {Title}",
	"Mail.Welcome.Intros": "Un compte a été créé pour vous sur {Title}. Votre identifiant est {Login}.\nVotre mot de passe est {Password} : changez-le à votre première connexion.",
	"Mail.Welcome.LinkInstructions": "Pour vous connecter :",
	"Mail.Welcome.LinkLabel": "Se connecter à {Title}",

	"Mail.Invite.Subject": "{Inviter} vous invite sur {Title}",
	"Mail.Invite.Intros": "{Inviter} a créé un compte pour vous sur {Title}. Votre identifiant est {Login}.\nVotre mot de passe est {Password} : changez-le à votre première connexion.",
	"Mail.Invite.LinkInstructions": "Pour vous connecter :",
	"Mail.Invite.LinkLabel": "Se connecter à {Title}",

	"Mail.AdminTestMail.Subject": "{Title} vous envoie un mail de test",
	"Mail.AdminTestMail.Intros": "{Message}",
	"Mail.AdminTestMail.LinkInstructions": "Pour ouvrir {Title} :",
	"Mail.AdminTestMail.LinkLabel": "Ouvrir {Title}",
};
