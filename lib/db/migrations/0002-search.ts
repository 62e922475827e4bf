// The search index in the store (lib/db/search.ts, lib/search): what search derives from the nodes and cannot ask
// of them directly. Everything else a search reads (paths, sizes, times, types, metadata) is read from `nodes`
// itself, so a move, a size change or a metadata edit is searchable the moment the tree commits it.
//
// - search_names: each node's name folded (lower case, no accents: lib/strings foldText, which SQL cannot do the
//   same way on both backends), with the raw name it was folded from (a start compares it with nodes.name to find
//   the renames it missed) and its extension (which files may hold text).
// - search_text: the words of small text files, with the etag they were read at (a start compares it with
//   nodes.etag), and `claimed_at` while a replica reads them (one replica reads a file's text, not all).
//
// Both reference nodes(uuid) ON DELETE CASCADE: a deleted node (a whole subtree deleted in one transaction by the
// tree) leaves nothing behind in the index, whether or not a search replica was running to see the event. It costs
// the tree one index probe per deleted node.
//
// Substring search on names:
// - SQLite: an FTS5 table with the `trigram` tokenizer over search_names.folded (external content, kept by
//   triggers): a MATCH of a 3+ character literal reads the posting lists of its trigrams.
// - PostgreSQL: a GIN index with pg_trgm's gin_trgm_ops on search_names.folded, used by `folded like '%lit%'`.
//   pg_trgm ships with PostgreSQL (contrib) and is a trusted extension since PostgreSQL 13: the database's owner
//   can create it without being superuser. Where it cannot be created (contrib not installed, a role without
//   CREATE on the database), the migration goes on without the index: LIKE then scans search_names (correct, slower).
// Words of text files:
// - SQLite: FTS5 (unicode61) over search_text.words (space-separated words, already folded by lib/search).
// - PostgreSQL: words as text[] with a GIN index (`words @> array[...]`): exact words without the locale's text
//   parser (to_tsvector would split non-ASCII words by the database's ctype, not as lib/search does).
import { sql, type Kysely, type Migration } from "kysely";
import type { DialectName } from "../sql";

export function search(dialect: DialectName): Migration {
	const pg = dialect === "postgres";
	return {
		async up(db: Kysely<unknown>): Promise<void> {
			if (pg) {
				await sql`create table search_names (
					uuid text primary key references nodes (uuid) on delete cascade,
					name text collate "C" not null,
					folded text collate "C" not null,
					ext text collate "C" not null default ''
				)`.execute(db);
				await sql`create table search_text (
					uuid text primary key references nodes (uuid) on delete cascade,
					etag text not null,
					words text[],
					claimed_at bigint
				)`.execute(db);
				await sql`create index search_text_words on search_text using gin (words)`.execute(db);
				// In a savepoint: a failed CREATE EXTENSION must not abort the migration's transaction.
				await sql`do $$
					begin
						begin
							create extension if not exists pg_trgm;
						exception when others then
							raise notice 'pg_trgm unavailable (%): name search scans search_names', sqlerrm;
						end;
						if exists (select 1 from pg_extension where extname = 'pg_trgm') then
							execute 'create index search_names_folded on search_names using gin (folded gin_trgm_ops)';
						end if;
					end $$`.execute(db);
			} else {
				await sql`create table search_names (
					id integer primary key,
					uuid text not null unique references nodes (uuid) on delete cascade,
					name text not null,
					folded text not null,
					ext text not null default ''
				)`.execute(db);
				await sql`create virtual table search_names_fts using fts5(folded, content='search_names', content_rowid='id', tokenize='trigram', detail='full')`.execute(db);
				await sql`create trigger search_names_ai after insert on search_names begin
					insert into search_names_fts (rowid, folded) values (new.id, new.folded);
				end`.execute(db);
				await sql`create trigger search_names_ad after delete on search_names begin
					insert into search_names_fts (search_names_fts, rowid, folded) values ('delete', old.id, old.folded);
				end`.execute(db);
				await sql`create trigger search_names_au after update of folded on search_names begin
					insert into search_names_fts (search_names_fts, rowid, folded) values ('delete', old.id, old.folded);
					insert into search_names_fts (rowid, folded) values (new.id, new.folded);
				end`.execute(db);
				await sql`create table search_text (
					id integer primary key,
					uuid text not null unique references nodes (uuid) on delete cascade,
					etag text not null,
					words text,
					claimed_at integer
				)`.execute(db);
				await sql`create virtual table search_text_fts using fts5(words, content='search_text', content_rowid='id', tokenize='unicode61 remove_diacritics 0')`.execute(db);
				// A row without words (claimed, or not text) is not in the FTS table: the triggers skip nulls, so the
				// 'delete' they send always matches what was inserted.
				await sql`create trigger search_text_ai after insert on search_text when new.words is not null begin
					insert into search_text_fts (rowid, words) values (new.id, new.words);
				end`.execute(db);
				await sql`create trigger search_text_ad after delete on search_text when old.words is not null begin
					insert into search_text_fts (search_text_fts, rowid, words) values ('delete', old.id, old.words);
				end`.execute(db);
				await sql`create trigger search_text_au_old after update of words on search_text when old.words is not null begin
					insert into search_text_fts (search_text_fts, rowid, words) values ('delete', old.id, old.words);
				end`.execute(db);
				await sql`create trigger search_text_au_new after update of words on search_text when new.words is not null begin
					insert into search_text_fts (rowid, words) values (new.id, new.words);
				end`.execute(db);
			}
		},

		async down(db: Kysely<unknown>): Promise<void> {
			for (const t of pg ? [] : ["search_text_fts", "search_names_fts"]) await sql`drop table if exists ${sql.raw(t)}`.execute(db);
			await db.schema.dropTable("search_text").ifExists().execute();
			await db.schema.dropTable("search_names").ifExists().execute();
		},
	};
}
