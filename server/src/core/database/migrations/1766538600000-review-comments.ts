import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 46: a person's review of a Requirement's changes as comments on lines (drafts until sent
 * as one review), each a thread the agent answers; they follow the code from import to import.
 * And the files each person viewed, at the content they viewed.
 * Both go with their Requirement (ON DELETE CASCADE: a purge takes them).
 */
export class ReviewComments1766538600000 implements MigrationInterface {
  name = 'ReviewComments1766538600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE review_comment (
      id varchar PRIMARY KEY NOT NULL,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      path text NOT NULL,
      line integer NOT NULL,
      end_line integer NOT NULL,
      side varchar NOT NULL,
      body text NOT NULL,
      state varchar NOT NULL,
      outdated boolean NOT NULL,
      anchor_commit varchar NOT NULL,
      excerpt text NOT NULL,
      author_kind varchar NOT NULL,
      author_id varchar,
      author_name varchar,
      message_id varchar,
      sent_at varchar,
      created_at varchar NOT NULL,
      updated_at varchar NOT NULL
    )`);
    await q.query('CREATE INDEX review_comment_requirement ON review_comment (requirement_id, created_at)');
    await q.query(`CREATE TABLE review_comment_reply (
      id varchar PRIMARY KEY NOT NULL,
      comment_id varchar NOT NULL REFERENCES review_comment(id) ON DELETE CASCADE,
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      author_kind varchar NOT NULL,
      author_id varchar,
      author_name varchar,
      body text NOT NULL,
      created_at varchar NOT NULL
    )`);
    await q.query('CREATE INDEX review_comment_reply_comment ON review_comment_reply (comment_id, created_at)');
    await q.query(`CREATE TABLE review_viewed_file (
      requirement_id varchar NOT NULL REFERENCES requirement(id) ON DELETE CASCADE,
      person_id varchar NOT NULL,
      path text NOT NULL,
      blob varchar NOT NULL,
      viewed_at varchar NOT NULL,
      PRIMARY KEY (requirement_id, person_id, path)
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE review_viewed_file');
    await q.query('DROP TABLE review_comment_reply');
    await q.query('DROP TABLE review_comment');
  }
}
